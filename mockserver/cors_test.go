package mockserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// corsFixture is servertest.DPoPFixture whose public client spa may be called from
// https://app.test, with a client web-app whose webOrigins is "+" (its
// redirect URI's origin, https://web.test), and a realm open whose client
// allows any origin.
func corsFixture() mockserver.Fixture {
	f := servertest.DPoPFixture()
	f.Realms[0].Clients[1].WebOrigins = []string{"https://app.test"}
	f.Realms[0].Clients = append(f.Realms[0].Clients, mockserver.FixtureClient{ClientID: "web-app", Public: true,
		RedirectURIs: []string{"https://web.test/cb", "http://localhost:8000/cb"}, WebOrigins: []string{"+"}})
	f.Realms = append(f.Realms, mockserver.FixtureRealm{Name: "open",
		Clients: []mockserver.FixtureClient{{ClientID: "anything", Public: true, WebOrigins: []string{"*"}}}})
	return f
}

// preflight sends a browser's CORS preflight for method on path from
// origin.
func preflight(t *testing.T, srv *mockservertest.Server, path, origin, method string) servertest.Result {
	t.Helper()
	return servertest.Send(t, srv, http.MethodOptions, path, "", nil, http.Header{
		"Origin": {origin}, "Access-Control-Request-Method": {method},
		"Access-Control-Request-Headers": {"authorization,content-type,dpop"},
	})
}

// TestCORSPreflight: a browser's preflight from an origin a client of the
// path's realm allows (webOrigins: an origin, "+" for its redirect URIs',
// "*") is answered 204 with the CORS headers, the origin itself in
// Access-Control-Allow-Origin; from any other origin it is 403 without
// them. It used to be 405 for every origin.
func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(corsFixture()))
	for _, tc := range []struct {
		name, path, origin, method string
		allowed                    bool
	}{
		{"token endpoint", tokenPath, "https://app.test", "POST", true},
		{"decision", authorizePath, "https://app.test", "POST", true},
		{"organizations", "/admin/realms/acme/organizations", "https://app.test", "GET", true},
		{"userinfo", userinfoPath, "https://app.test", "GET", true},
		{"discovery", "/realms/acme/.well-known/openid-configuration", "https://app.test", "GET", true},
		{"RFC 8414 metadata", "/.well-known/oauth-authorization-server/realms/acme", "https://app.test", "GET", true},
		{"redirect URI's origin (+)", tokenPath, "https://web.test", "POST", true},
		{"the other redirect URI's origin (+)", tokenPath, "http://localhost:8000", "POST", true},
		{"any origin (*)", "/realms/open/protocol/openid-connect/token", "https://elsewhere.test", "POST", true},
		{"another origin", tokenPath, "https://evil.test", "POST", false},
		{"another port", tokenPath, "https://app.test:8443", "POST", false},
		{"another scheme", tokenPath, "http://app.test", "POST", false},
		{"null origin", tokenPath, "null", "POST", false},
		{"another realm's origin", "/realms/master/protocol/openid-connect/token", "https://app.test", "POST", false},
		{"platform administration (master)", "/admin/tenants", "https://app.test", "POST", false},
		{"unknown realm", "/realms/nowhere/protocol/openid-connect/token", "https://app.test", "POST", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := preflight(t, srv, tc.path, tc.origin, tc.method)
			require.Contains(t, res.Header.Values("Vary"), "Origin")
			if !tc.allowed {
				require.Equal(t, http.StatusForbidden, res.Status)
				for k := range res.Header {
					require.False(t, strings.HasPrefix(k, "Access-Control-"), "no CORS header: %s", k)
				}
				require.Equal(t, "Forbidden", res.JSON(t)["error"])
				return
			}
			require.Equal(t, http.StatusNoContent, res.Status, string(res.Body))
			require.Empty(t, res.Body)
			require.Equal(t, tc.origin, res.Header.Get("Access-Control-Allow-Origin"))
			require.Equal(t, "true", res.Header.Get("Access-Control-Allow-Credentials"))
			require.Contains(t, strings.Split(res.Header.Get("Access-Control-Allow-Methods"), ", "), tc.method)
			for _, h := range []string{"Authorization", "Content-Type", "DPoP"} {
				require.Contains(t, strings.Split(res.Header.Get("Access-Control-Allow-Headers"), ", "), h)
			}
			require.NotEmpty(t, res.Header.Get("Access-Control-Max-Age"))
		})
	}

	// An OPTIONS that is not a preflight names the path's methods.
	res := servertest.Send(t, srv, http.MethodOptions, "/admin/realms/acme/organizations", "", nil, nil)
	require.Equal(t, http.StatusNoContent, res.Status)
	require.Equal(t, "GET, HEAD, POST, OPTIONS", res.Header.Get("Allow"))
	require.Empty(t, res.Header.Get("Access-Control-Allow-Origin"))
}

// TestCORSActualResponses: an answer to a browser carries
// Access-Control-Allow-Origin (and exposes WWW-Authenticate and
// DPoP-Nonce) when the client of the request allows its origin: the token
// request's client, the token's azp; before a client is known (discovery,
// a request without a token), any client of the realm. Another origin, or
// a client that does not list it, gets no CORS header.
func TestCORSActualResponses(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(corsFixture()))
	spa := srv.Token("acme", "alice", mockserver.TokenClient("spa"))
	cli := srv.Token("acme", "alice") // admin-cli: no web origins
	decision := `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`
	password := func(client string) string {
		return url.Values{"grant_type": {"password"}, "client_id": {client}, "username": {"alice"}, "password": {"alice-pw"}}.Encode()
	}
	for _, tc := range []struct {
		name, method, path, token, body string // a body is JSON or a form
		wantStatus                      int
		allowed                         bool
	}{
		{"token request of spa", "POST", tokenPath, "", password("spa"), 200, true},
		{"token request of admin-cli", "POST", tokenPath, "", password("admin-cli"), 200, false},
		{"token request of an unknown client", "POST", tokenPath, "", password("nobody"), 401, true},
		{"decision with spa's token", "POST", authorizePath, spa, decision, 200, true},
		{"decision with admin-cli's token", "POST", authorizePath, cli, decision, 200, false},
		{"decision without a token", "POST", authorizePath, "", decision, 401, true},
		{"userinfo with spa's token", "GET", userinfoPath, spa, "", 200, true},
		{"revocation by spa", "POST", revokePath, "", "client_id=spa&token=x", 200, true},
		{"discovery", "GET", "/realms/acme/.well-known/openid-configuration", "", "", 200, true},
		{"JWKS", "GET", "/realms/acme/protocol/openid-connect/certs", "", "", 200, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for origin, want := range map[string]bool{"https://app.test": tc.allowed, "https://evil.test": false} {
				h := http.Header{"Origin": {origin}}
				if tc.token != "" {
					h.Set("Authorization", "Bearer "+tc.token)
				}
				ct := ""
				if tc.body != "" {
					ct = "application/x-www-form-urlencoded"
				}
				if strings.HasPrefix(tc.body, "{") {
					ct = "application/json"
				}
				res := servertest.Send(t, srv, tc.method, tc.path, ct, strings.NewReader(tc.body), h)
				require.Equal(t, tc.wantStatus, res.Status, string(res.Body))
				require.Contains(t, res.Header.Values("Vary"), "Origin")
				if !want {
					require.Empty(t, res.Header.Get("Access-Control-Allow-Origin"), origin)
					require.Empty(t, res.Header.Get("Access-Control-Expose-Headers"), origin)
					continue
				}
				require.Equal(t, origin, res.Header.Get("Access-Control-Allow-Origin"))
				require.Equal(t, "true", res.Header.Get("Access-Control-Allow-Credentials"))
				exposed := strings.Split(res.Header.Get("Access-Control-Expose-Headers"), ", ")
				require.Contains(t, exposed, "WWW-Authenticate")
				require.Contains(t, exposed, "DPoP-Nonce")
			}
		})
	}
}

// TestCORSOrigins: WithCORSOrigins allows its origins on every realm and
// for every client, the master realm included; New refuses an entry that
// is not an origin, and so does it a fixture client's.
func TestCORSOrigins(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithCORSOrigins("http://localhost:5173"))
	for _, path := range []string{tokenPath, "/admin/tenants", "/realms/master/protocol/openid-connect/token", authorizePath} {
		res := preflight(t, srv, path, "http://localhost:5173", "POST")
		require.Equal(t, http.StatusNoContent, res.Status, path)
		require.Equal(t, "http://localhost:5173", res.Header.Get("Access-Control-Allow-Origin"), path)
		require.Equal(t, http.StatusForbidden, preflight(t, srv, path, "http://localhost:5174", "POST").Status, path)
	}
	res := servertest.Send(t, srv, http.MethodPost, authorizePath, "application/json",
		strings.NewReader(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`),
		http.Header{"Origin": {"http://localhost:5173"}, "Authorization": {"Bearer " + srv.Token("acme", "alice")}})
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, "http://localhost:5173", res.Header.Get("Access-Control-Allow-Origin"), "whatever the token's client")

	for _, bad := range []string{"localhost:5173", "http://localhost:5173/", "http://localhost:5173/app", "ftp://x.test", "https://App.test", "+", ""} {
		_, err := mockserver.New(mockserver.WithCORSOrigins(bad))
		require.ErrorContains(t, err, "WithCORSOrigins", bad)
		f := servertest.DPoPFixture()
		f.Realms[0].Clients[1].WebOrigins = []string{bad}
		if bad == "+" {
			continue // "+" is a client's redirect URIs' origins
		}
		_, err = mockserver.New(mockserver.WithFixture(f))
		require.ErrorContains(t, err, `client "spa": web origin`, bad)
	}
	parsed, err := mockserver.ParseFixture([]byte(`{"realms":[{"name":"acme","clients":[{"clientId":"spa","public":true,"webOrigins":["https://app.test","+"]}]}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"https://app.test", "+"}, parsed.Realms[0].Clients[0].WebOrigins, "the fixture's JSON field")
	f := servertest.DPoPFixture()
	f.Realms[0].Clients[1].WebOrigins = []string{"https://app.test", "https://app.test"}
	_, err = mockserver.New(mockserver.WithFixture(f))
	require.ErrorContains(t, err, "listed twice")
}
