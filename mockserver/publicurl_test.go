package mockserver

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestIssuerBase: forwarding headers count only from a trusted proxy, the
// last entry of a list counts, X-Forwarded-* come before Forwarded, and
// values that are not a scheme or a host are ignored.
func TestIssuerBase(t *testing.T) {
	t.Parallel()
	s := mustNew(t, WithTrustedProxies("10.0.0.0/8", "192.0.2.7, ::1"))
	tests := []struct {
		name, remote string
		tls          bool
		header       http.Header
		want         string
	}{
		{"no proxy", "198.51.100.1:5000", false, nil, "http://api.test:8080"},
		{"TLS", "198.51.100.1:5000", true, nil, "https://api.test:8080"},
		{"untrusted peer", "198.51.100.1:5000", false, http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"evil.test"}}, "http://api.test:8080"},
		{"untrusted peer, Forwarded", "198.51.100.1:5000", false, http.Header{"Forwarded": {"proto=https;host=evil.test"}}, "http://api.test:8080"},
		{"trusted network", "10.1.2.3:5000", false, http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"public.test"}}, "https://public.test"},
		{"trusted address", "192.0.2.7:5000", false, http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"public.test:8443"}}, "https://public.test:8443"},
		{"trusted IPv6", "[::1]:5000", false, http.Header{"X-Forwarded-Proto": {"https"}}, "https://api.test:8080"},
		{"neighbour of a trusted address", "192.0.2.8:5000", false, http.Header{"X-Forwarded-Proto": {"https"}}, "http://api.test:8080"},
		{"default port dropped", "10.0.0.1:1", false, http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"public.test:443"}}, "https://public.test"},
		{"X-Forwarded-Port", "10.0.0.1:1", false, http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"public.test"}, "X-Forwarded-Port": {"8443"}}, "https://public.test:8443"},
		{"last of a list", "10.0.0.1:1", false, http.Header{"X-Forwarded-Proto": {"http, https"}, "X-Forwarded-Host": {"client.test", "proxy.test"}}, "https://proxy.test"},
		{"Forwarded", "10.0.0.1:1", false, http.Header{"Forwarded": {`for=1.2.3.4;proto=http;host="x.test", for=5.6.7.8;proto=https;host="public.test"`}}, "https://public.test"},
		{"X-Forwarded before Forwarded", "10.0.0.1:1", false, http.Header{"Forwarded": {"proto=http;host=other.test"}, "X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"public.test"}}, "https://public.test"},
		{"bad proto ignored", "10.0.0.1:1", false, http.Header{"X-Forwarded-Proto": {"javascript"}}, "http://api.test:8080"},
		{"bad host ignored", "10.0.0.1:1", false, http.Header{"X-Forwarded-Host": {"evil.test/path"}}, "http://api.test:8080"},
		{"host with userinfo ignored", "10.0.0.1:1", false, http.Header{"X-Forwarded-Host": {"a@evil.test"}}, "http://api.test:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "http://api.test:8080/x", nil)
			r.RemoteAddr = tt.remote
			if tt.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for k, v := range tt.header {
				r.Header[k] = v
			}
			assert.Equal(t, tt.want, s.issuerBase(r))
		})
	}

	fixed := mustNew(t, WithIssuer("https://fixed.test"), WithTrustedProxies("10.0.0.0/8"))
	r := httptest.NewRequest(http.MethodGet, "http://api.test/x", nil)
	r.RemoteAddr = "10.0.0.1:1"
	r.Header.Set("X-Forwarded-Host", "public.test")
	assert.Equal(t, "https://fixed.test", fixed.issuerBase(r), "WithIssuer wins")

	_, err := New(WithTrustedProxies("not-an-address"))
	require.Error(t, err)
}

// TestDPoPBehindTrustedProxy: behind a proxy that terminates TLS, a client
// gets a token for the public issuer and its proofs name the public URL;
// without -issuer this used to fail, the forwarding headers being ignored.
// The same headers from an untrusted peer change nothing.
func TestDPoPBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{true, false} {
		var opts []Option
		if trusted {
			opts = append(opts, WithTrustedProxies("127.0.0.1", "::1"))
		}
		s := testkit.Must(New(append(opts, WithFixture(Fixture{Realms: []FixtureRealm{{Name: "acme",
			Users:   []FixtureUser{{Username: "alice", Password: "pw", Roles: []string{"realm-admin"}}},
			Clients: []FixtureClient{{ClientID: "orders-api", Secret: "s"}}}}}))...))(t)
		ts := testkit.Serve(t, s)
		signer := newKey(t)
		const public = "https://auth.public.test"
		proxied := func(req *http.Request) *http.Response {
			req.Header.Set("X-Forwarded-Proto", "https")
			req.Header.Set("X-Forwarded-Host", "auth.public.test")
			resp := testkit.Must(ts.Client().Do(req))(t)
			t.Cleanup(func() { resp.Body.Close() })
			return resp
		}
		proof := proofOf(t, signer, http.MethodPost, public+"/realms/acme/protocol/openid-connect/token", "", "")
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/realms/acme/protocol/openid-connect/token",
			strings.NewReader(url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"pw"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("DPoP", proof)
		resp := proxied(req)
		if !trusted {
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "the proof names a URL the server does not see")
			continue
		}
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		(&apiResp{Body: readAll(t, resp)}).into(t, &tok)

		authz := public + "/realms/acme/authorization-decision-provider/authorize"
		proof = proofOf(t, signer, http.MethodPost, authz, tok.AccessToken, "")
		req, _ = http.NewRequest(http.MethodPost, ts.URL+"/realms/acme/authorization-decision-provider/authorize",
			strings.NewReader(`{"clientId":"orders-api","resources":[{"name":"x"}],"context":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "DPoP "+tok.AccessToken)
		req.Header.Set("DPoP", proof)
		require.Equal(t, http.StatusOK, proxied(req).StatusCode)

		disc, _ := http.NewRequest(http.MethodGet, ts.URL+"/realms/acme/.well-known/openid-configuration", nil)
		require.Contains(t, string(readAll(t, proxied(disc))), `"issuer":"`+public+`/realms/acme"`)
	}
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	var b strings.Builder
	testkit.Must(io.Copy(&b, resp.Body))(t)
	return []byte(b.String())
}
