package interop_test

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// The fixtures and request helpers below are those of the reference
// server's own tests (mockserver/*_test.go), which another module cannot
// import.

const (
	tokenPath     = "/realms/acme/protocol/openid-connect/token"
	authorizePath = "/realms/acme/authorization-decision-provider/authorize"
	userinfoPath  = "/realms/acme/protocol/openid-connect/userinfo"
)

// identityFixture has a realm admin, a user, a confidential client and a
// platform admin.
func identityFixture() mockserver.Fixture {
	return mockserver.Fixture{
		Realms: []mockserver.FixtureRealm{{
			Name:  "acme",
			Roles: []mockserver.FixtureRole{{Name: "viewer"}},
			Users: []mockserver.FixtureUser{
				{Username: "alice", Password: "alice-pw", Email: "alice@acme.test", Roles: []string{"realm-admin"}},
				{Username: "bob", Password: "bob-pw", Roles: []string{"viewer"}},
			},
			Clients: []mockserver.FixtureClient{
				{ClientID: "orders-api", Secret: "orders-secret", ServiceAccountRoles: []string{"viewer"}},
				{ClientID: "spa", Public: true},
			},
		}},
		PlatformAdmins: []mockserver.FixturePlatformAdmin{{ClientID: "platform-admin", Secret: "admin-secret"}},
	}
}

// dpopFixture is identityFixture with a resource orders that realm admins
// may read.
func dpopFixture() mockserver.Fixture {
	f := identityFixture()
	f.Realms[0].Clients[0].Resources = []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read"}}}
	f.Realms[0].Clients[0].Permissions = []mockserver.FixturePermission{{Name: "admins read", Resource: "orders", Roles: []string{"realm-admin"}}}
	return f
}

// authCodeFixture is dpopFixture with the public client web-app and the
// confidential orders-api both registering redirect.
func authCodeFixture(redirect string) mockserver.Fixture {
	f := dpopFixture()
	f.Realms[0].Clients[0].RedirectURIs = []string{redirect}
	f.Realms[0].Clients = append(f.Realms[0].Clients, mockserver.FixtureClient{ClientID: "web-app", Public: true,
		RedirectURIs: []string{redirect, "https://app.test/cb?tenant=acme"}})
	return f
}

// httpResult is a decoded answer of the server.
type httpResult struct {
	status int
	header http.Header
	body   []byte
}

func (h httpResult) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(h.body, &m), string(h.body))
	return m
}

// send performs one request against srv.
func send(t *testing.T, srv *mockservertest.Server, method, path, contentType string, body io.Reader, header http.Header) httpResult {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, body)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return httpResult{status: resp.StatusCode, header: resp.Header, body: b}
}

func tokenRequest(t *testing.T, srv *mockservertest.Server, realm string, form url.Values, header http.Header) httpResult {
	t.Helper()
	return formPost(t, srv, "/realms/"+realm+"/protocol/openid-connect/token", form, header)
}

// formPost posts form to path with header.
func formPost(t *testing.T, srv *mockservertest.Server, path string, form url.Values, header http.Header) httpResult {
	t.Helper()
	return send(t, srv, http.MethodPost, path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), header)
}

// postJSON posts body to path, with token as Bearer when it is not empty.
func postJSON(t *testing.T, srv *mockservertest.Server, path, token, body string) httpResult {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return send(t, srv, http.MethodPost, path, "application/json", strings.NewReader(body), h)
}

// bearerGet GETs path with token as Bearer.
func bearerGet(t *testing.T, srv *mockservertest.Server, path, token string) httpResult {
	t.Helper()
	return send(t, srv, http.MethodGet, path, "", nil, http.Header{"Authorization": {"Bearer " + token}})
}

// adminCall calls an admin route with token as Bearer and body as JSON
// when it is not empty.
func adminCall(t *testing.T, srv *mockservertest.Server, method, path, token, body string) httpResult {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		return send(t, srv, method, path, "application/json", strings.NewReader(body), h)
	}
	return send(t, srv, method, path, "", nil, h)
}

// dpopToken asks the token endpoint for a token bound to signer's key.
func dpopToken(t *testing.T, srv *mockservertest.Server, signer *dpop.Signer, nonce string) httpResult {
	t.Helper()
	proof, err := signer.Proof(http.MethodPost, srv.URL+tokenPath, "", nonce)
	require.NoError(t, err)
	return tokenRequest(t, srv, "acme", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"alice"}, "password": {"alice-pw"}}, http.Header{"Dpop": {proof}})
}

// redirectTarget is a client's redirection endpoint: it records nothing
// and answers 200, so that a client following the server's redirect ends
// there with the code in its URL.
func redirectTarget(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "signed in")
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/cb"
}

var (
	formAction  = regexp.MustCompile(`<form id="login" method="post" action="([^"]*)">`)
	hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`)
)

// signIn posts the login form of authURL as a browser would, follows the
// redirect to the client and returns the URL it ended at.
func signIn(t *testing.T, client *http.Client, authURL, username, password string) *url.URL {
	t.Helper()
	resp, err := client.Get(authURL)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	m := formAction.FindSubmatch(b)
	require.NotNil(t, m, string(b))
	fields := url.Values{}
	for _, h := range hiddenInput.FindAllSubmatch(b, -1) {
		fields.Add(html.UnescapeString(string(h[1])), html.UnescapeString(string(h[2])))
	}
	fields.Set("username", username)
	fields.Set("password", password)
	resp, err = client.PostForm(html.UnescapeString(string(m[1])), fields)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ = io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "signed in", string(b), "the browser ended at the client")
	return resp.Request.URL
}
