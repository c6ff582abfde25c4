package mockserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAuthorizationEndpoint feeds arbitrary queries and form bodies to the
// authorization endpoint: the answer is never a 5xx, a redirect only ever
// goes to the client's registered URI, and every exchange matches the
// OpenAPI document.
func FuzzAuthorizationEndpoint(f *testing.F) {
	const registered = "https://app.test/cb"
	s, err := New(WithIssuer("http://example.com"), WithFixture(Fixture{Realms: []FixtureRealm{{
		Name:  "acme",
		Users: []FixtureUser{{Username: "alice", Password: "pw"}},
		Clients: []FixtureClient{{ClientID: "web", Public: true, RedirectURIs: []string{registered}},
			{ClientID: "api", Secret: "s", RedirectURIs: []string{registered + "?x=1"}}},
	}}}))
	if err != nil {
		f.Fatal(err)
	}
	pkce := "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"
	for _, seed := range []string{
		"response_type=code&client_id=web&redirect_uri=https%3A%2F%2Fapp.test%2Fcb&scope=openid&state=s&nonce=n" + pkce,
		"response_type=code&client_id=web&redirect_uri=https%3A%2F%2Fapp.test%2Fcb&username=alice&password=pw" + pkce,
		"response_type=code&client_id=api&redirect_uri=https%3A%2F%2Fapp.test%2Fcb%3Fx%3D1&username=alice&password=pw&state=%00",
		"response_type=token&client_id=web&redirect_uri=https%3A%2F%2Fapp.test%2Fcb&state=a&state=b",
		"client_id=web&redirect_uri=https%3A%2F%2Fevil.test%2Fcb", "client_id=web&client_id=api", "%zz", "", ";",
		"response_type=code&client_id=web&redirect_uri=https%3A%2F%2Fapp.test%2Fcb&prompt=none&code_challenge_method=plain",
	} {
		f.Add(seed, false, "application/x-www-form-urlencoded")
		f.Add(seed, true, "application/x-www-form-urlencoded")
		f.Add(seed, true, "text/plain")
	}
	f.Fuzz(func(t *testing.T, params string, post bool, ct string) {
		target := "http://example.com/realms/acme/protocol/openid-connect/auth"
		req, ok := formRequest(target, params, post, ct)
		if !ok {
			return
		}
		rec := serveFuzz(t, s, req)
		if rec.Code == http.StatusFound {
			loc := rec.Header().Get("Location")
			if !strings.HasPrefix(loc, registered+"?") && !strings.HasPrefix(loc, registered+"?x=1&") {
				t.Fatalf("redirected to %q", loc)
			}
		}
	})
}

// formRequest is a fuzz input's form request to target: params as a POST
// body of Content-Type ct, or as the query of a GET; false when params
// cannot be a GET's query (a request line no client could send).
func formRequest(target, params string, post bool, ct string) (*http.Request, bool) {
	if post {
		req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(params))
		req.Header.Set("Content-Type", ct)
		return req, true
	}
	if strings.ContainsAny(params, " #\x00\r\n\t") || strings.ContainsFunc(params, func(r rune) bool { return r < 0x20 || r >= 0x7f }) {
		return nil, false
	}
	return httptest.NewRequest(http.MethodGet, target+"?"+params, nil), true
}
