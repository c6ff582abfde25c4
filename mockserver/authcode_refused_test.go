package mockserver_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestAnAuthorizationRequestWithAnUnsupportedBindingParameterIsRefused: a
// parameter that would bind the code (its audience, its claims, its
// user) or say where the request's parameters are (a request object, a
// pushed request) is honoured or refused, never dropped: the server
// supports none of these, so a request with any of them, shown the form
// (GET) or posting it with valid credentials, is redirected with an error
// naming it and no code, and the metadata says so of those it has a field
// for. Parameters the server knows nothing of are still ignored (RFC 6749
// section 3.1).
func TestAnAuthorizationRequestWithAnUnsupportedBindingParameterIsRefused(t *testing.T) {
	t.Parallel()
	redirect := servertest.RedirectTarget(t)
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.AuthCodeFixture(redirect)))
	client := noRedirect(srv.Client())
	for _, tc := range []struct{ param, value, code string }{
		{"request", "eyJhbGciOiJub25lIn0.eyJzY29wZSI6Im9wZW5pZCJ9.", "request_not_supported"},
		{"request_uri", "urn:ietf:params:oauth:request_uri:6esc_11ACC5bwc014ltc14eY22c", "request_uri_not_supported"},
		{"claims", `{"id_token":{"acr":{"essential":true,"value":"urn:mace:incommon:iap:silver"}}}`, "invalid_request"},
		{"resource", "https://orders.example/", "invalid_request"},
		{"authorization_details", `[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"123.50"}}]`, "invalid_request"},
		{"id_token_hint", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "invalid_request"},
		{"registration", `{"logo_uri":"https://client.example.org/logo.png"}`, "registration_not_supported"},
	} {
		t.Run(tc.param, func(t *testing.T) {
			q := authCodeRequest(redirect, newVerifier())
			q.Set(tc.param, tc.value)
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				var (
					resp *http.Response
					err  error
				)
				if method == http.MethodGet {
					resp, err = client.Get(srv.URL + authPath + "?" + q.Encode())
				} else {
					form := cloneValues(q)
					form.Set("username", "alice")
					form.Set("password", "alice-pw")
					resp, err = client.PostForm(srv.URL+authPath, form)
				}
				require.NoError(t, err)
				_ = resp.Body.Close()
				require.Equal(t, http.StatusFound, resp.StatusCode, method)
				loc := parseURL(t, resp.Header.Get("Location"))
				require.Equal(t, tc.code, loc.Query().Get("error"), "%s: %s", method, loc)
				require.Contains(t, loc.Query().Get("error_description"), tc.param, method)
				require.Empty(t, loc.Query().Get("code"), method)
				require.Equal(t, "st-1", loc.Query().Get("state"), method)
			}
		})
	}
	t.Run("unknown parameters are ignored", func(t *testing.T) {
		q := authCodeRequest(redirect, newVerifier())
		q.Set("ui_locales", "fr-CA")
		q.Set("x_vendor_hint", "anything")
		getCode(t, srv, q)
	})
	t.Run("the metadata says so", func(t *testing.T) {
		for _, path := range []string{"/realms/acme/.well-known/openid-configuration", "/.well-known/oauth-authorization-server/realms/acme"} {
			res := servertest.Send(t, srv, http.MethodGet, path, "", nil, nil)
			require.Equal(t, http.StatusOK, res.Status, path)
			doc := res.JSON(t)
			for _, field := range []string{"request_parameter_supported", "request_uri_parameter_supported", "claims_parameter_supported"} {
				// Absent, request_uri_parameter_supported would be
				// true (OpenID Connect Discovery 1.0 section 3).
				v, ok := doc[field]
				require.True(t, ok, "%s: %s is absent", path, field)
				require.Equal(t, false, v, "%s: %s", path, field)
			}
		}
	})
}

// TestATokenRequestWithAnUnsupportedBindingParameterIsRefused: at the
// token endpoint too, resource (RFC 8707) and authorization_details (RFC
// 9396) would bind the token; the server supports neither, so a request
// with either is 400 invalid_request naming it, for every grant, rather
// than a token that honours none of it; a code so refused is left to its
// client.
func TestATokenRequestWithAnUnsupportedBindingParameterIsRefused(t *testing.T) {
	t.Parallel()
	redirect := servertest.RedirectTarget(t)
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.AuthCodeFixture(redirect)))
	for _, p := range []struct{ name, value string }{
		{"resource", "https://orders.example/"},
		{"authorization_details", `[{"type":"payment_initiation"}]`},
	} {
		t.Run(p.name, func(t *testing.T) {
			verifier := newVerifier()
			code := getCode(t, srv, authCodeRequest(redirect, verifier))
			codeForm := url.Values{"grant_type": {"authorization_code"}, "client_id": {"web-app"}, "code": {code},
				"redirect_uri": {redirect}, "code_verifier": {verifier}}
			for _, tc := range []struct {
				grant string
				form  url.Values
			}{
				{"password", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice-pw"}}},
				{"client_credentials", url.Values{"grant_type": {"client_credentials"}, "client_id": {"orders-api"}, "client_secret": {"orders-secret"}}},
				{"authorization_code", codeForm},
			} {
				form := cloneValues(tc.form)
				form.Set(p.name, p.value)
				res := servertest.TokenRequest(t, srv, "acme", form, nil)
				require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", tc.grant, answerOf(t, res))
				require.Equal(t, "invalid_request", res.JSON(t)["error"], tc.grant)
				require.Contains(t, res.JSON(t)["error_description"], p.name, tc.grant)
				if tc.grant != "authorization_code" { // without it, the request is good
					res = servertest.TokenRequest(t, srv, "acme", tc.form, nil)
					require.Equal(t, http.StatusOK, res.Status, "%s: %s", tc.grant, answerOf(t, res))
				}
			}
			res := servertest.TokenRequest(t, srv, "acme", codeForm, nil)
			require.Equal(t, http.StatusOK, res.Status, "the refusal left the code to its client: %s", answerOf(t, res))
		})
	}
}
