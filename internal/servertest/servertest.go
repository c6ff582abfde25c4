// Package servertest holds the fixtures and request helpers of the
// reference server's own tests (mockserver) that integration/interop, in
// another module, runs too. It is imported by tests only.
package servertest

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

// TokenPath is the token endpoint of the realm acme.
const TokenPath = "/realms/acme/protocol/openid-connect/token"

// IdentityFixture has a realm admin, a user, a confidential client and a
// platform admin.
func IdentityFixture() mockserver.Fixture {
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

// DPoPFixture is IdentityFixture with a resource orders that realm admins
// may read.
func DPoPFixture() mockserver.Fixture {
	f := IdentityFixture()
	f.Realms[0].Clients[0].Resources = []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read"}}}
	f.Realms[0].Clients[0].Permissions = []mockserver.FixturePermission{{Name: "admins read", Resource: "orders", Roles: []string{"realm-admin"}}}
	return f
}

// AuthCodeFixture is DPoPFixture with the public client web-app and the
// confidential orders-api both registering redirect.
func AuthCodeFixture(redirect string) mockserver.Fixture {
	f := DPoPFixture()
	f.Realms[0].Clients[0].RedirectURIs = []string{redirect}
	f.Realms[0].Clients = append(f.Realms[0].Clients, mockserver.FixtureClient{ClientID: "web-app", Public: true,
		RedirectURIs: []string{redirect, "https://app.test/cb?tenant=acme"}})
	return f
}

// Result is a decoded answer of the server.
type Result struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as a JSON object; anything else fails the test.
func (h Result) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(h.Body, &m), string(h.Body))
	return m
}

// Send performs one request against srv, with header's values and
// contentType as Content-Type when it is set.
func Send(t *testing.T, srv *mockservertest.Server, method, path, contentType string, body io.Reader, header http.Header) Result {
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
	return Result{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// TokenRequest posts form to the token endpoint of realm with header.
func TokenRequest(t *testing.T, srv *mockservertest.Server, realm string, form url.Values, header http.Header) Result {
	t.Helper()
	return FormPost(t, srv, "/realms/"+realm+"/protocol/openid-connect/token", form, header)
}

// FormPost posts form to path with header.
func FormPost(t *testing.T, srv *mockservertest.Server, path string, form url.Values, header http.Header) Result {
	t.Helper()
	return Send(t, srv, http.MethodPost, path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), header)
}

// DPoPToken asks the token endpoint for alice's token bound to signer's
// key, with nonce in the proof when it is set.
func DPoPToken(t *testing.T, srv *mockservertest.Server, signer *dpop.Signer, nonce string) Result {
	t.Helper()
	proof, err := signer.Proof(http.MethodPost, srv.URL+TokenPath, "", nonce)
	require.NoError(t, err)
	return TokenRequest(t, srv, "acme", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"alice"}, "password": {"alice-pw"}}, http.Header{"Dpop": {proof}})
}

// RedirectTarget is a client's redirection endpoint: it records nothing
// and answers 200, so that a client following the server's redirect ends
// there with the code in its URL.
func RedirectTarget(t *testing.T) string {
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

// LoginForm GETs authURL, which must answer the login form, and returns
// the form's action and fields (the hidden ones).
func LoginForm(t *testing.T, client *http.Client, authURL string) (string, url.Values) {
	t.Helper()
	resp, err := client.Get(authURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	m := formAction.FindSubmatch(b)
	require.NotNil(t, m, string(b))
	fields := url.Values{}
	for _, h := range hiddenInput.FindAllSubmatch(b, -1) {
		fields.Add(html.UnescapeString(string(h[1])), html.UnescapeString(string(h[2])))
	}
	return html.UnescapeString(string(m[1])), fields
}

// SignIn posts the login form of authURL as a browser would, follows the
// redirect to the client and returns the URL it ended at.
func SignIn(t *testing.T, client *http.Client, authURL, username, password string) *url.URL {
	t.Helper()
	action, fields := LoginForm(t, client, authURL)
	fields.Set("username", username)
	fields.Set("password", password)
	resp, err := client.PostForm(action, fields)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "signed in", string(b), "the browser ended at the client")
	return resp.Request.URL
}
