package mockserver

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
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
			req := testkit.Must(http.NewRequestWithContext(ctx, tt.method, tt.path, body))(t)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp := testkit.Must(a.hc.Do(req))(t, "the request waited for another realm's lock")
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			require.Equal(t, tt.want, resp.StatusCode, "%s", b)
		})
	}
}

// TestDPoPReplayCachesArePerRealm fills acme's replay cache, made small
// here, with alice's proofs of one second, and requires that acme then
// answers a proof of that same second (which the full cache cannot tell
// from a replay) 503 with Retry-After, not a challenge: the server's
// capacity, not a bad proof, and a client told invalid_dpop_proof would
// throw its token away. Globex's DPoP requests and the master realm's DPoP
// token requests go on working. With one replay cache for the whole
// server, a flood of proofs in one realm refused DPoP in every realm.
func TestDPoPReplayCachesArePerRealm(t *testing.T) {
	a := newOrgAPI(t)
	a.s.auth.proofOpts = append(a.s.auth.proofOpts, dpop.WithReplayCacheSize(3))
	key := newKey(t)
	signer := key.WithClock(func() time.Time { return time.Unix(0, a.now.Load()) }) // the server's second
	for range 3 {
		require.Equal(t, http.StatusOK, a.dpopGet(t, signer, "acme", "alice").Status)
	}
	resp := a.dpopGet(t, signer, "acme", "alice")
	require.Equal(t, http.StatusServiceUnavailable, resp.Status, "acme's replay cache is full of proofs as new")
	require.Equal(t, proofRetryAfter, resp.Header.Get("Retry-After"))
	require.Empty(t, resp.Header.Get("WWW-Authenticate"), "a full cache is no challenge to the token")

	require.Equal(t, http.StatusOK, a.dpopGet(t, signer, "globex", "gina").Status, "globex has a replay cache of its own")

	tokenURL := a.url + "/realms/master/protocol/openid-connect/token"
	h := formHeader(dpopHeader(t, signer, http.MethodPost, tokenURL, ""))
	h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("platform-admin:boot"))) // newOrgAPI's WithAdminSecret
	tr := a.sendHeader(t, http.MethodPost, tokenURL, url.Values{"grant_type": {"client_credentials"}}.Encode(), h)
	require.Equal(t, http.StatusOK, tr.Status, "master's token endpoint: %s", tr.Body)
	require.Contains(t, string(tr.Body), `"token_type":"DPoP"`)
}

// dpopGet lists realm's organizations as user, with a token bound to
// signer's key and a proof signer makes.
func (a *orgAPI) dpopGet(t *testing.T, signer *dpop.Signer, realm, user string) *apiResp {
	t.Helper()
	tok := testkit.Must(a.s.IssueToken(realm, user, TokenDPoPBinding(signer.Thumbprint())))(t)
	u := a.url + "/admin/realms/" + realm + "/organizations"
	return a.sendHeader(t, http.MethodGet, u, "", dpopHeader(t, signer, http.MethodGet, u, tok))
}

// TestOnlyAuthenticatedRequestsPaceOtherRealms: a realm's writes are paced
// while another realm serves callers (mockserver/internal/store/fair.go), and only a
// request whose token was verified makes a realm a served one. Anonymous
// and badly authenticated requests to globex (the token endpoint with a bad
// grant, JWKS, discovery, decisions with no token, acme's token or a forged
// one, gina's DPoP-bound token without its proof) never do, so that nobody
// can slow acme's admin with junk or a stolen bound token; gina's request
// with token and proof does, and acme's own verified requests make acme
// one.
func TestOnlyAuthenticatedRequestsPaceOtherRealms(t *testing.T) {
	a := newOrgAPI(t)
	do := func(method, path, token, contentType, body string) {
		t.Helper()
		a.sendRaw(token, method, a.url+path, contentType, body)
	}
	const decide = "/realms/globex/authorization-decision-provider/authorize"
	const decision = `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`
	forged := strings.Join([]string{"eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9", "eyJpc3MiOiJ4Iiwic3ViIjoieCJ9", "AAAA"}, ".")

	do(http.MethodGet, "/admin/realms/acme/organizations", a.admin, "", "")
	require.Equal(t, []string{"acme"}, a.s.store.LastServing())
	for _, junk := range []struct{ method, path, token, contentType, body string }{
		{http.MethodPost, "/realms/globex/protocol/openid-connect/token", "", "application/x-www-form-urlencoded", "grant_type=nope"},
		{http.MethodPost, "/realms/globex/protocol/openid-connect/token", "", "application/x-www-form-urlencoded",
			url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"gina"}, "password": {"wrong"}}.Encode()},
		{http.MethodGet, "/realms/globex/protocol/openid-connect/certs", "", "", ""},
		{http.MethodGet, "/realms/globex/.well-known/openid-configuration", "", "", ""},
		{http.MethodPost, decide, "", "application/json", decision},
		{http.MethodPost, decide, a.admin, "application/json", decision},
		{http.MethodPost, decide, forged, "application/json", decision},
		{http.MethodGet, "/admin/realms/globex/organizations", a.admin, "", ""},
	} {
		do(junk.method, junk.path, junk.token, junk.contentType, junk.body)
		require.NotContains(t, a.s.store.LastServing(), "globex", "%s %s", junk.method, junk.path)
	}

	// gina's DPoP-bound token without its proof verifies but is refused
	// (and not remembered): a stolen bound token serves nobody. With its
	// proof, it counts.
	a.now.Store(time.Now().UnixNano()) // proofs carry the wall clock's iat
	signer := newKey(t)
	bound := testkit.Must(a.s.IssueToken("globex", "gina", TokenDPoPBinding(signer.Thumbprint())))(t)
	orgs := "/admin/realms/globex/organizations"
	do(http.MethodGet, orgs, bound, "", "")
	require.NotContains(t, a.s.store.LastServing(), "globex", "a bound token without its proof")
	resp := a.sendHeader(t, http.MethodGet, a.url+orgs, "", dpopHeader(t, signer, http.MethodGet, a.url+orgs, bound))
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	require.Equal(t, "globex", a.s.store.LastServing()[0])
}
