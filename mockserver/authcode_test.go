package mockserver_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

const authPath = "/realms/acme/protocol/openid-connect/auth"

// noRedirect is client not following redirects.
func noRedirect(client *http.Client) *http.Client {
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// newVerifier returns a PKCE code verifier (RFC 7636 section 4.1): 32
// random bytes, base64url without padding (43 characters).
func newVerifier() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error
	return base64.RawURLEncoding.EncodeToString(b)
}

// s256Challenge is the S256 code challenge of verifier (RFC 7636 section
// 4.2): BASE64URL(SHA256(ASCII(verifier))).
func s256Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authCodeRequest is a valid authorization request of web-app with PKCE.
func authCodeRequest(redirect, verifier string) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {"web-app"}, "redirect_uri": {redirect},
		"scope": {"openid"}, "state": {"st-1"}, "nonce": {"n-1"},
		"code_challenge": {s256Challenge(verifier)}, "code_challenge_method": {"S256"}}
}

// getCode runs the authorization request q to its redirect and returns the
// code.
func getCode(t *testing.T, srv *mockservertest.Server, q url.Values) string {
	t.Helper()
	back := servertest.SignIn(t, srv.Client(), srv.URL+authPath+"?"+q.Encode(), "alice", "alice-pw")
	code := back.Query().Get("code")
	require.NotEmpty(t, code, back.String())
	return code
}

// TestAuthCodeErrors: what the authorization and token endpoints refuse in
// the code flow, and how. An error is redirected only to a registered URI.
func TestAuthCodeErrors(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	target := servertest.RedirectTarget(t)
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.AuthCodeFixture(target)), mockserver.WithClock(clock))
	verifier := newVerifier()
	exchange := func(form url.Values) servertest.Result {
		t.Helper()
		base := url.Values{"grant_type": {"authorization_code"}, "client_id": {"web-app"}, "redirect_uri": {target}, "code_verifier": {verifier}}
		for k, v := range form {
			base[k] = v
		}
		for k, v := range base {
			if len(v) == 1 && v[0] == "-" {
				delete(base, k)
			}
		}
		return servertest.TokenRequest(t, srv, "acme", base, nil)
	}
	requireGrantError := func(res servertest.Result, status int, code string) {
		t.Helper()
		require.Equal(t, status, res.Status, string(res.Body))
		require.Equal(t, code, res.JSON(t)["error"], string(res.Body))
	}

	t.Run("wrong verifier is refused and leaves the code to its redeemer", func(t *testing.T) {
		// Only a redemption that passes every check spends the code: one
		// holding the code without its verifier cannot burn it.
		code := getCode(t, srv, authCodeRequest(target, verifier))
		requireGrantError(exchange(url.Values{"code": {code}, "code_verifier": {newVerifier()}}), 400, "invalid_grant")
		require.Equal(t, 200, exchange(url.Values{"code": {code}}).Status)
		requireGrantError(exchange(url.Values{"code": {code}}), 400, "invalid_grant")
	})
	// One code per row, got by the authorization request edit makes (as
	// web-app when nil), redeemed wait later with form over exchange's.
	asOrders := func(q url.Values) { q.Set("client_id", "orders-api") }
	orders := url.Values{"client_id": {"orders-api"}, "client_secret": {"orders-secret"}}
	for _, tc := range []struct {
		name   string
		edit   func(url.Values)
		wait   time.Duration
		form   url.Values
		status int
		code   string
	}{
		{"missing verifier", nil, 0, url.Values{"code_verifier": {"-"}}, 400, "invalid_request"},
		{"expired code", nil, 60 * time.Second, nil, 400, "invalid_grant"},
		{"code within its 60 s", nil, 59 * time.Second, nil, 200, ""},
		{"wrong redirect_uri at the token endpoint", nil, 0, url.Values{"redirect_uri": {"https://app.test/cb?tenant=acme"}}, 400, "invalid_grant"},
		{"missing redirect_uri at the token endpoint", nil, 0, url.Values{"redirect_uri": {"-"}}, 400, "invalid_request"},
		{"code of another client", nil, 0, orders, 400, "invalid_grant"},
		{"verifier without a challenge", func(q url.Values) {
			asOrders(q)
			q.Del("code_challenge")
			q.Del("code_challenge_method")
		}, 0, orders, 400, "invalid_grant"},
		{"confidential client must authenticate", asOrders, 0, url.Values{"client_id": {"orders-api"}}, 401, "invalid_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := authCodeRequest(target, verifier)
			if tc.edit != nil {
				tc.edit(q)
			}
			form := url.Values{"code": {getCode(t, srv, q)}}
			now.Add(int64(tc.wait))
			maps.Copy(form, tc.form)
			res := exchange(form)
			require.Equal(t, tc.status, res.Status, string(res.Body))
			if tc.code != "" {
				requireGrantError(res, tc.status, tc.code)
			}
		})
	}

	client := noRedirect(srv.Client())
	get := func(q url.Values) *http.Response {
		t.Helper()
		resp := testkit.Must(client.Get(srv.URL + authPath + "?" + q.Encode()))(t)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp
	}
	// Never redirected: the client or its redirect URI is not known.
	for name, edit := range map[string]func(url.Values){
		"unregistered redirect_uri": func(q url.Values) { q.Set("redirect_uri", "https://evil.test/cb") },
		"redirect_uri by prefix":    func(q url.Values) { q.Set("redirect_uri", target+"/more") },
		"redirect_uri of another":   func(q url.Values) { q.Set("client_id", "spa") },
		"missing redirect_uri":      func(q url.Values) { q.Del("redirect_uri") },
		"redirect_uri twice":        func(q url.Values) { q.Add("redirect_uri", target) },
		"unknown client":            func(q url.Values) { q.Set("client_id", "ghost") },
		"missing client":            func(q url.Values) { q.Del("client_id") },
	} {
		t.Run(name, func(t *testing.T) {
			q := authCodeRequest(target, verifier)
			edit(q)
			resp := get(q)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Empty(t, resp.Header.Get("Location"))
		})
	}
	// Redirected with an error and the state.
	for name, tc := range map[string]struct {
		edit func(url.Values)
		want string
	}{
		"missing PKCE for a public client": {func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, "invalid_request"},
		"plain PKCE":                       {func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request"},
		"challenge without method":         {func(q url.Values) { q.Del("code_challenge_method") }, "invalid_request"},
		"short challenge":                  {func(q url.Values) { q.Set("code_challenge", "abc") }, "invalid_request"},
		"implicit flow":                    {func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
		"missing response_type":            {func(q url.Values) { q.Del("response_type") }, "invalid_request"},
		"fragment response mode":           {func(q url.Values) { q.Set("response_mode", "fragment") }, "invalid_request"},
		"nonce twice":                      {func(q url.Values) { q.Add("nonce", "n-2") }, "invalid_request"},
		"prompt none":                      {func(q url.Values) { q.Set("prompt", "none") }, "login_required"},
	} {
		t.Run(name, func(t *testing.T) {
			q := authCodeRequest(target, verifier)
			tc.edit(q)
			resp := get(q)
			require.Equal(t, http.StatusFound, resp.StatusCode)
			loc := parseURL(t, resp.Header.Get("Location"))
			require.Equal(t, target, loc.Scheme+"://"+loc.Host+loc.Path)
			require.Equal(t, tc.want, loc.Query().Get("error"))
			require.NotEmpty(t, loc.Query().Get("error_description"))
			require.Equal(t, "st-1", loc.Query().Get("state"))
			require.Empty(t, loc.Query().Get("code"))
		})
	}
	t.Run("registered query is kept", func(t *testing.T) {
		q := authCodeRequest("https://app.test/cb?tenant=acme", verifier)
		q.Set("response_type", "token")
		loc := parseURL(t, get(q).Header.Get("Location"))
		require.Equal(t, "acme", loc.Query().Get("tenant"))
		require.Equal(t, "unsupported_response_type", loc.Query().Get("error"))
	})
	t.Run("wrong password shows the form again", func(t *testing.T) {
		action, fields := servertest.LoginForm(t, client, srv.URL+authPath+"?"+authCodeRequest(target, verifier).Encode())
		for _, user := range [][2]string{{"alice", "wrong"}, {"alice", ""}, {"", ""}, {"service-account-orders-api", ""}, {"zed", "x"}} {
			fields.Set("username", user[0])
			fields.Set("password", user[1])
			resp := testkit.Must(client.PostForm(action, fields))(t)
			b, _ := io.ReadAll(resp.Body)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Empty(t, resp.Header.Get("Location"))
			require.Contains(t, string(b), "Invalid username or password.")
		}
	})
	t.Run("malformed posts", func(t *testing.T) {
		_, fields := servertest.LoginForm(t, client, srv.URL+authPath+"?"+authCodeRequest(target, verifier).Encode())
		fields.Set("username", "alice")
		fields.Set("password", "alice-pw")
		res := servertest.Send(t, srv, http.MethodPost, authPath, "application/json", strings.NewReader(`{}`), nil)
		require.Equal(t, http.StatusBadRequest, res.Status)
		res = servertest.Send(t, srv, http.MethodPost, authPath, "application/x-www-form-urlencoded", strings.NewReader("%zz"), nil)
		require.Equal(t, http.StatusBadRequest, res.Status)
		fields.Add("client_id", "web-app")
		res = servertest.Send(t, srv, http.MethodPost, authPath, "application/x-www-form-urlencoded", strings.NewReader(fields.Encode()), nil)
		require.Equal(t, http.StatusBadRequest, res.Status, "client_id twice")
	})
	t.Run("unknown realm", func(t *testing.T) {
		res := servertest.Send(t, srv, http.MethodGet, "/realms/nowhere/protocol/openid-connect/auth?"+authCodeRequest(target, verifier).Encode(), "", nil, nil)
		require.Equal(t, http.StatusNotFound, res.Status)
	})
}
