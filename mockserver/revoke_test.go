package mockserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

const (
	userinfoPath   = "/realms/acme/protocol/openid-connect/userinfo"
	revokePath     = "/realms/acme/protocol/openid-connect/revoke"
	introspectPath = "/realms/acme/protocol/openid-connect/token/introspect"
)

// revokeAs revokes token as the client clientID (secret "" for a public
// client, sent in the form).
func revokeAs(t *testing.T, srv *mockservertest.Server, clientID, secret, token string) servertest.Result {
	t.Helper()
	form := url.Values{"client_id": {clientID}, "token": {token}}
	if secret != "" {
		form.Set("client_secret", secret)
	}
	return servertest.FormPost(t, srv, revokePath, form, nil)
}

// introspectAs introspects token as orders-api.
func introspectAs(t *testing.T, srv *mockservertest.Server, token string) map[string]any {
	t.Helper()
	res := servertest.FormPost(t, srv, introspectPath, url.Values{"client_id": {"orders-api"}, "client_secret": {"orders-secret"}, "token": {token}}, nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	return res.JSON(t)
}

// TestUserinfo: the userinfo endpoint answers, GET and POST, the token's
// user as the realm knows them, for a user, a service account and a
// DPoP-bound token with its proof; without a valid token it is a 401 with
// the challenges every protected route sends.
func TestUserinfo(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()))
	alice := srv.Token("acme", "alice")
	aliceID := subjectOf(t, alice)
	sa := srv.Token("acme", "service-account-orders-api")

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		res := servertest.Send(t, srv, method, userinfoPath, "", nil, http.Header{"Authorization": {"Bearer " + alice}})
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
		require.Equal(t, map[string]any{"sub": aliceID, "preferred_username": "alice", "email": "alice@acme.test"}, res.JSON(t), method)
	}
	res := bearerCall(t, srv, http.MethodGet, userinfoPath, sa, "")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, map[string]any{"sub": subjectOf(t, sa), "preferred_username": "service-account-orders-api"}, res.JSON(t))

	signer := newKey(t)
	bound := servertest.DPoPToken(t, srv, signer, "").JSON(t)["access_token"].(string)
	proof := proofOf(t, signer, http.MethodGet, srv.URL+userinfoPath, bound, "")
	res = servertest.Send(t, srv, http.MethodGet, userinfoPath, "", nil, http.Header{"Authorization": {"DPoP " + bound}, "Dpop": {proof}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, "alice", res.JSON(t)["preferred_username"])

	for name, h := range map[string]http.Header{
		"no token":            nil,
		"garbage":             {"Authorization": {"Bearer nope"}},
		"bound without proof": {"Authorization": {"DPoP " + bound}},
		"bound as Bearer":     {"Authorization": {"Bearer " + bound}},
		"other realm":         {"Authorization": {"Bearer " + srv.Token("master", "service-account-platform-admin")}},
	} {
		res := servertest.Send(t, srv, http.MethodGet, userinfoPath, "", nil, h)
		require.Equal(t, http.StatusUnauthorized, res.Status, name)
		require.NotEmpty(t, res.Header.Values("WWW-Authenticate"), name)
	}
}

// TestRevocation: a client revokes an access token issued to it (RFC
// 7009), and every route refuses it from then on, the decision endpoints
// included, even where its verification was remembered (the token was used
// before it was revoked); introspection calls it inactive. Other tokens of
// the same user are untouched.
func TestRevocation(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()))
	decision := `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`
	routes := func(t *testing.T, token string) map[string]int {
		t.Helper()
		return map[string]int{
			"decision":      bearerCall(t, srv, http.MethodPost, authorizePath, token, decision).Status,
			"authzen":       bearerCall(t, srv, http.MethodPost, evaluationPath, token, `{"subject":{"type":"user","id":"alice"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"}}`).Status,
			"organizations": bearerCall(t, srv, http.MethodGet, "/admin/realms/acme/organizations", token, "").Status,
			"userinfo":      bearerCall(t, srv, http.MethodGet, userinfoPath, token, "").Status,
		}
	}
	// AuthZEN answers only a client's service account: a user's token
	// passes its token check and is then 403.
	allOK := map[string]int{"decision": 200, "authzen": 403, "organizations": 200, "userinfo": 200}
	all401 := map[string]int{"decision": 401, "authzen": 401, "organizations": 401, "userinfo": 401}

	for _, tc := range []struct {
		name           string
		client, secret string
		token          func() string
	}{
		{"public client", "admin-cli", "", func() string { return srv.Token("acme", "alice") }},
		{"confidential client", "orders-api", "orders-secret", func() string {
			return srv.Token("acme", "alice", mockserver.TokenClient("orders-api"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tok, other := tc.token(), tc.token()
			require.Equal(t, allOK, routes(t, tok), "used, so remembered, before it is revoked")
			require.Equal(t, true, introspectAs(t, srv, tok)["active"])

			res := revokeAs(t, srv, tc.client, tc.secret, tok)
			require.Equal(t, http.StatusOK, res.Status, string(res.Body))
			require.Empty(t, res.Body)
			require.Equal(t, all401, routes(t, tok))
			require.Equal(t, map[string]any{"active": false}, introspectAs(t, srv, tok))
			res = bearerCall(t, srv, http.MethodPost, authorizePath, tok, decision)
			require.Contains(t, res.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
			require.Contains(t, res.JSON(t)["message"], "revoked")

			require.Equal(t, http.StatusOK, revokeAs(t, srv, tc.client, tc.secret, tok).Status, "revoking twice")
			require.Equal(t, allOK, routes(t, other), "the user's other token")
		})
	}

	t.Run("DPoP-bound", func(t *testing.T) {
		t.Parallel()
		signer := newKey(t)
		bound := servertest.DPoPToken(t, srv, signer, "").JSON(t)["access_token"].(string)
		call := func() int {
			proof := proofOf(t, signer, http.MethodGet, srv.URL+userinfoPath, bound, "")
			return servertest.Send(t, srv, http.MethodGet, userinfoPath, "", nil, http.Header{"Authorization": {"DPoP " + bound}, "Dpop": {proof}}).Status
		}
		require.Equal(t, http.StatusOK, call())
		require.Equal(t, http.StatusOK, revokeAs(t, srv, "admin-cli", "", bound).Status)
		require.Equal(t, http.StatusUnauthorized, call(), "with a valid proof")
	})
}

// TestRevocationRefusals: what the revocation endpoint refuses, as
// Keycloak does, and the tokens it answers 200 without revoking anything
// (RFC 7009 section 2.2): the token stays usable after each. With either
// access-token algorithm: with ES256 access tokens, an ID token (RS256)
// was taken for a malformed token and answered 200.
func TestRevocationRefusals(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			testRevocationRefusals(t, alg)
		})
	}
}

func testRevocationRefusals(t *testing.T, alg string) {
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithAccessTokenAlgorithm(alg))
	alice := srv.Token("acme", "alice") // issued to admin-cli
	idRes := servertest.TokenRequest(t, srv, "acme", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"alice"}, "password": {"alice-pw"}, "scope": {"openid"}}, nil)
	idToken := idRes.JSON(t)["id_token"].(string)
	basic := func(id, secret string) http.Header {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.SetBasicAuth(id, secret)
		return http.Header{"Authorization": {r.Header.Get("Authorization")}}
	}

	for _, tc := range []struct {
		name       string
		form       url.Values
		header     http.Header
		ct         string
		wantStatus int
		wantError  string
	}{
		{"wrong secret", url.Values{"client_id": {"orders-api"}, "client_secret": {"nope"}, "token": {alice}}, nil, "", 401, "invalid_client"},
		{"wrong secret, Basic", url.Values{"token": {alice}}, basic("orders-api", "nope"), "", 401, "invalid_client"},
		{"unknown client", url.Values{"client_id": {"nobody"}, "token": {alice}}, nil, "", 401, "invalid_client"},
		{"no client", url.Values{"token": {alice}}, nil, "", 401, "invalid_client"},
		{"confidential client without its secret", url.Values{"client_id": {"orders-api"}, "token": {alice}}, nil, "", 401, "invalid_client"},
		{"no token", url.Values{"client_id": {"admin-cli"}}, nil, "", 400, "invalid_request"},
		{"a token of another client", url.Values{"token": {alice}}, basic("orders-api", "orders-secret"), "", 400, "invalid_request"},
		{"an ID token", url.Values{"client_id": {"admin-cli"}, "token": {idToken}}, nil, "", 400, "unsupported_token_type"},
		{"token twice", url.Values{"client_id": {"admin-cli"}, "token": {alice, alice}}, nil, "", 400, "invalid_request"},
		{"not a form", nil, nil, "application/json", 400, "invalid_request"},
		{"garbage token", url.Values{"client_id": {"admin-cli"}, "token": {"not-a-token"}}, nil, "", 200, ""},
		{"expired token", url.Values{"client_id": {"admin-cli"}, "token": {srv.Token("acme", "alice", mockserver.TokenLifetime(-time.Minute))}}, nil, "", 200, ""},
		{"another realm's token", url.Values{"client_id": {"admin-cli"}, "token": {srv.Token("master", "service-account-platform-admin", mockserver.TokenClient("admin-cli"))}}, nil, "", 200, ""},
		{"a hint", url.Values{"client_id": {"orders-api"}, "client_secret": {"orders-secret"}, "token": {"x"}, "token_type_hint": {"refresh_token"}}, nil, "", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.ct
			if ct == "" {
				ct = "application/x-www-form-urlencoded"
			}
			res := servertest.Send(t, srv, http.MethodPost, revokePath, ct, strings.NewReader(tc.form.Encode()), tc.header)
			require.Equal(t, tc.wantStatus, res.Status, string(res.Body))
			if tc.wantError != "" {
				require.Equal(t, tc.wantError, res.JSON(t)["error"])
				require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
			}
			if tc.header != nil && tc.wantStatus == 401 {
				require.Equal(t, `Basic realm="acme"`, res.Header.Get("WWW-Authenticate"))
			}
			require.Equal(t, http.StatusOK, bearerCall(t, srv, http.MethodGet, userinfoPath, alice, "").Status, "alice's token is not revoked")
		})
	}
	require.Equal(t, http.StatusNotFound,
		servertest.FormPost(t, srv, "/realms/nowhere/protocol/openid-connect/revoke", url.Values{"client_id": {"admin-cli"}, "token": {alice}}, nil).Status)
}

// TestIntrospection: a confidential client introspects (RFC 7662): an
// active token's claims with client_id, username and token_type (DPoP for
// a bound token), {"active": false} alone for anything else; a public
// client, a client that fails to authenticate and a malformed request are
// refused, as Keycloak refuses them.
func TestIntrospection(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()))
	alice := srv.Token("acme", "alice")
	got := introspectAs(t, srv, alice)
	require.Equal(t, true, got["active"])
	require.Equal(t, "admin-cli", got["client_id"])
	require.Equal(t, "alice", got["username"])
	require.Equal(t, "Bearer", got["token_type"])
	require.Equal(t, subjectOf(t, alice), got["sub"])
	require.Equal(t, srv.URL+"/realms/acme", got["iss"])
	require.NotEmpty(t, got["exp"])
	require.NotEmpty(t, got["jti"])
	require.Contains(t, got["realm_access"].(map[string]any)["roles"], "realm-admin")

	signer := newKey(t)
	bound := servertest.DPoPToken(t, srv, signer, "").JSON(t)["access_token"].(string)
	got = introspectAs(t, srv, bound)
	require.Equal(t, "DPoP", got["token_type"])
	require.Equal(t, signer.Thumbprint(), got["cnf"].(map[string]any)["jkt"])

	idToken := servertest.TokenRequest(t, srv, "acme", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"alice"}, "password": {"alice-pw"}, "scope": {"openid"}}, nil).JSON(t)["id_token"].(string)
	for name, tok := range map[string]string{
		"garbage":       "not-a-token",
		"expired":       srv.Token("acme", "alice", mockserver.TokenLifetime(-time.Minute)),
		"another realm": srv.Token("master", "service-account-platform-admin"),
		"an ID token":   idToken,
	} {
		require.Equal(t, map[string]any{"active": false}, introspectAs(t, srv, tok), name)
	}

	for _, tc := range []struct {
		name       string
		form       url.Values
		wantStatus int
		wantError  string
	}{
		{"public client", url.Values{"client_id": {"admin-cli"}, "token": {alice}}, 403, "invalid_request"},
		{"wrong secret", url.Values{"client_id": {"orders-api"}, "client_secret": {"nope"}, "token": {alice}}, 401, "invalid_client"},
		{"no client", url.Values{"token": {alice}}, 401, "invalid_client"},
		{"no token", url.Values{"client_id": {"orders-api"}, "client_secret": {"orders-secret"}}, 400, "invalid_request"},
		{"unknown hint", url.Values{"client_id": {"orders-api"}, "client_secret": {"orders-secret"}, "token": {alice}, "token_type_hint": {"id_token"}}, 400, "invalid_request"},
	} {
		res := servertest.FormPost(t, srv, introspectPath, tc.form, nil)
		require.Equal(t, tc.wantStatus, res.Status, tc.name)
		require.Equal(t, tc.wantError, res.JSON(t)["error"], tc.name)
	}
	res := servertest.FormPost(t, srv, introspectPath, url.Values{"client_id": {"orders-api"}, "client_secret": {"orders-secret"}, "token": {alice}, "token_type_hint": {"access_token"}}, nil)
	require.Equal(t, true, res.JSON(t)["active"])
}
