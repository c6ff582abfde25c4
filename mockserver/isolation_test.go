package mockserver

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/store"
)

// TestRealmWorkDoesNotBlockOtherRealms holds globex's write lock, as a long
// write in globex would, and requires every kind of request of another realm
// and of platform administration to complete meanwhile: organization reads
// and writes, decisions, the token endpoint, JWKS, discovery, the audit log,
// the configuration and tenant provisioning. With one lock for all realms
// each of them waited for globex. The deadline only turns such a wait into a
// failure instead of a hung test; nothing here waits on time.
func TestRealmWorkDoesNotBlockOtherRealms(t *testing.T) {
	a := newOrgAPI(t)
	entered, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- a.s.store.Write("globex", func(*store.Realm) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	defer func() {
		close(release)
		require.NoError(t, <-held)
	}()

	admin := a.token("master", "service-account-platform-admin")
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice"}}.Encode()
	tests := []struct {
		name, method, path, token, contentType, body string
		want                                         int
	}{
		{"list organizations", http.MethodGet, a.base, a.admin, "", "", http.StatusOK},
		{"create an organization", http.MethodPost, a.base, a.admin, "application/json", `{"name":"Iso","alias":"iso"}`, http.StatusCreated},
		{"decision", http.MethodPost, a.url + "/realms/acme/authorization-decision-provider/authorize", a.admin, "application/json",
			`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`, http.StatusOK},
		{"token endpoint", http.MethodPost, a.url + "/realms/acme/protocol/openid-connect/token", "", "application/x-www-form-urlencoded", form, http.StatusOK},
		{"jwks", http.MethodGet, a.url + "/realms/acme/protocol/openid-connect/certs", "", "", "", http.StatusOK},
		{"discovery", http.MethodGet, a.url + "/realms/acme/.well-known/openid-configuration", "", "", "", http.StatusOK},
		{"audit page", http.MethodGet, a.url + "/admin/audit?count=5", admin, "", "", http.StatusOK},
		{"configuration", http.MethodGet, a.url + "/admin/config", admin, "", "", http.StatusOK},
		{"provision a tenant", http.MethodPost, a.url + "/admin/tenants", admin, "application/json",
			`{"name":"isolated","plan":"free","adminEmail":"ops@isolated.test"}`, http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, err := http.NewRequestWithContext(ctx, tt.method, tt.path, body)
			require.NoError(t, err)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := a.hc.Do(req)
			require.NoError(t, err, "the request waited for another realm's lock")
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			require.Equal(t, tt.want, resp.StatusCode, "%s", b)
		})
	}
}
