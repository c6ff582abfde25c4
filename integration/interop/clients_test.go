package interop_test

import (
	"crypto/rand"
	"net/http"
	"net/url"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestRealClients: go-oidc accepts the discovery document (its issuer
// check included) and verifies the RS256 ID token of a password grant made
// with x/oauth2; x/oauth2's client credentials flow works with the client
// secret in the header and in the form; the access tokens are accepted by
// the decision endpoint.
func TestRealClients(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()))
	ctx := oidc.ClientContext(t.Context(), srv.Client())
	iss := srv.URL + "/realms/acme"

	provider := testkit.Must(oidc.NewProvider(ctx, iss))(t)
	var meta struct {
		TokenEndpoint string   `json:"token_endpoint"`
		IDTokenAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}
	require.NoError(t, provider.Claims(&meta))
	require.Equal(t, []string{"RS256"}, meta.IDTokenAlgs)

	conf := oauth2.Config{ClientID: "admin-cli", Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
	tok := testkit.Must(conf.PasswordCredentialsToken(ctx, "alice", "alice-pw"))(t)
	rawID, ok := tok.Extra("id_token").(string)
	require.True(t, ok, "an ID token")
	id := testkit.Must(provider.Verifier(&oidc.Config{ClientID: "admin-cli"}).Verify(ctx, rawID))(t)
	require.Equal(t, iss, id.Issuer)
	var claims struct {
		Username string `json:"preferred_username"`
		Email    string `json:"email"`
	}
	require.NoError(t, id.Claims(&claims))
	require.Equal(t, "alice", claims.Username)
	require.Equal(t, "alice@acme.test", claims.Email)
	_, err := provider.Verifier(&oidc.Config{ClientID: "orders-api"}).Verify(ctx, rawID)
	require.Error(t, err, "the ID token is for admin-cli")

	res := postJSON(t, srv, authorizePath, tok.AccessToken, `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
	require.Equal(t, "GRANT", res.JSON(t)["status"])

	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams, oauth2.AuthStyleAutoDetect} {
		cc := clientcredentials.Config{ClientID: "orders-api", ClientSecret: "orders-secret", TokenURL: meta.TokenEndpoint, AuthStyle: style}
		ctok := testkit.Must(cc.Token(ctx))(t, "auth style %d", style)
		require.Equal(t, "Bearer", ctok.TokenType)
		res := postJSON(t, srv, authorizePath, ctok.AccessToken, `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
		require.Equal(t, 200, res.Status)
	}
	bad := clientcredentials.Config{ClientID: "orders-api", ClientSecret: "wrong", TokenURL: meta.TokenEndpoint}
	_, err = bad.Token(ctx)
	var re *oauth2.RetrieveError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "invalid_client", re.ErrorCode)
}

// TestRealClientsAuthCode: the authorization code flow as x/oauth2 and
// go-oidc drive it against the discovery document: AuthCodeURL with a
// nonce and an S256 challenge, the login form posted as a browser would,
// the redirect followed to the client, Exchange with the verifier, and
// the ID token verified, its nonce included. A confidential client
// exchanges with its secret, and a DPoP proof binds the token.
func TestRealClientsAuthCode(t *testing.T) {
	t.Parallel()
	target := servertest.RedirectTarget(t)
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.AuthCodeFixture(target)))
	ctx := oidc.ClientContext(t.Context(), srv.Client())
	iss := srv.URL + "/realms/acme"
	provider := testkit.Must(oidc.NewProvider(ctx, iss))(t)
	require.Equal(t, iss+"/protocol/openid-connect/auth", provider.Endpoint().AuthURL)

	conf := oauth2.Config{ClientID: "web-app", Endpoint: provider.Endpoint(), RedirectURL: target,
		Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
	verifier, state, nonce := oauth2.GenerateVerifier(), "state-"+rand.Text(), rand.Text()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
	back := servertest.SignIn(t, srv.Client(), authURL, "alice", "alice-pw")
	require.Equal(t, target, back.Scheme+"://"+back.Host+back.Path)
	require.Equal(t, state, back.Query().Get("state"))
	code := back.Query().Get("code")
	require.NotEmpty(t, code)

	tok := testkit.Must(conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)))(t)
	require.Equal(t, "Bearer", tok.TokenType)
	rawID, ok := tok.Extra("id_token").(string)
	require.True(t, ok, "an ID token")
	id := testkit.Must(provider.Verifier(&oidc.Config{ClientID: "web-app"}).Verify(ctx, rawID))(t)
	require.Equal(t, nonce, id.Nonce)
	var claims struct {
		Username string `json:"preferred_username"`
		AuthTime int64  `json:"auth_time"`
	}
	require.NoError(t, id.Claims(&claims))
	require.Equal(t, "alice", claims.Username)
	require.NotZero(t, claims.AuthTime)
	res := postJSON(t, srv, authorizePath, tok.AccessToken, `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
	require.Equal(t, "GRANT", res.JSON(t)["status"])

	_, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	var re *oauth2.RetrieveError
	require.ErrorAs(t, err, &re, "a code is redeemed once")
	require.Equal(t, "invalid_grant", re.ErrorCode)

	// A confidential client, with PKCE too, its secret in either place.
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		cc := oauth2.Config{ClientID: "orders-api", ClientSecret: "orders-secret", RedirectURL: target,
			Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID}}
		cc.Endpoint.AuthStyle = style
		verifier := oauth2.GenerateVerifier()
		back := servertest.SignIn(t, srv.Client(), cc.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), "bob", "bob-pw")
		tok := testkit.Must(cc.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier)))(t, "auth style %d", style)
		id := testkit.Must(provider.Verifier(&oidc.Config{ClientID: "orders-api"}).Verify(ctx, tok.Extra("id_token").(string)))(t)
		require.Empty(t, id.Nonce)
	}
	cc := oauth2.Config{ClientID: "orders-api", ClientSecret: "wrong", RedirectURL: target, Endpoint: provider.Endpoint()}
	back = servertest.SignIn(t, srv.Client(), cc.AuthCodeURL("s"), "bob", "bob-pw")
	_, err = cc.Exchange(ctx, back.Query().Get("code"))
	require.ErrorAs(t, err, &re)
	require.Equal(t, "invalid_client", re.ErrorCode)

	// DPoP: a proof with the exchange binds the token to its key. With
	// nonces required, the first attempt is told the nonce and the code
	// survives it.
	require.Equal(t, http.StatusOK, adminCall(t, srv, http.MethodPut, "/admin/config", srv.AdminToken(), `{"dpopNonceRequired":true}`).Status)
	signer := testkit.Must(dpop.GenerateKey())(t)
	verifier = oauth2.GenerateVerifier()
	back = servertest.SignIn(t, srv.Client(), conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), "alice", "alice-pw")
	exchange := func(nonce string) servertest.Result {
		proof := testkit.Must(signer.Proof(http.MethodPost, provider.Endpoint().TokenURL, "", nonce))(t)
		return servertest.TokenRequest(t, srv, "acme", url.Values{"grant_type": {"authorization_code"}, "client_id": {"web-app"},
			"code": {back.Query().Get("code")}, "redirect_uri": {target}, "code_verifier": {verifier}}, http.Header{"Dpop": {proof}})
	}
	dres := exchange("")
	require.Equal(t, "use_dpop_nonce", dres.JSON(t)["error"])
	dres = exchange(dres.Header.Get("DPoP-Nonce"))
	require.Equal(t, http.StatusOK, dres.Status, string(dres.Body))
	require.Equal(t, "DPoP", dres.JSON(t)["token_type"])
	require.Equal(t, "openid profile email", dres.JSON(t)["scope"])
	bound := dres.JSON(t)["access_token"].(string)
	require.Equal(t, http.StatusUnauthorized, postJSON(t, srv, authorizePath, bound, `{"clientId":"orders-api","resources":[],"context":{}}`).Status,
		"a DPoP-bound token sent as Bearer")
}
