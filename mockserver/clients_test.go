package mockserver_test

import (
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

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
	srv := mockservertest.Start(t, mockserver.WithFixture(dpopFixture()))
	ctx := oidc.ClientContext(t.Context(), srv.Client())
	iss := srv.URL + "/realms/acme"

	provider, err := oidc.NewProvider(ctx, iss)
	require.NoError(t, err)
	var meta struct {
		TokenEndpoint string   `json:"token_endpoint"`
		IDTokenAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}
	require.NoError(t, provider.Claims(&meta))
	require.Equal(t, []string{"RS256"}, meta.IDTokenAlgs)

	conf := oauth2.Config{ClientID: "admin-cli", Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
	tok, err := conf.PasswordCredentialsToken(ctx, "alice", "alice-pw")
	require.NoError(t, err)
	rawID, ok := tok.Extra("id_token").(string)
	require.True(t, ok, "an ID token")
	id, err := provider.Verifier(&oidc.Config{ClientID: "admin-cli"}).Verify(ctx, rawID)
	require.NoError(t, err)
	require.Equal(t, iss, id.Issuer)
	var claims struct {
		Username string `json:"preferred_username"`
		Email    string `json:"email"`
	}
	require.NoError(t, id.Claims(&claims))
	require.Equal(t, "alice", claims.Username)
	require.Equal(t, "alice@acme.test", claims.Email)
	_, err = provider.Verifier(&oidc.Config{ClientID: "orders-api"}).Verify(ctx, rawID)
	require.Error(t, err, "the ID token is for admin-cli")

	res := postJSON(t, srv, authorizePath, tok.AccessToken, `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
	require.Equal(t, "GRANT", res.json(t)["status"])

	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams, oauth2.AuthStyleAutoDetect} {
		cc := clientcredentials.Config{ClientID: "orders-api", ClientSecret: "orders-secret", TokenURL: meta.TokenEndpoint, AuthStyle: style}
		ctok, err := cc.Token(ctx)
		require.NoError(t, err, "auth style %d", style)
		require.Equal(t, "Bearer", ctok.TokenType)
		res := postJSON(t, srv, authorizePath, ctok.AccessToken, `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
		require.Equal(t, 200, res.status)
	}
	bad := clientcredentials.Config{ClientID: "orders-api", ClientSecret: "wrong", TokenURL: meta.TokenEndpoint}
	_, err = bad.Token(ctx)
	var re *oauth2.RetrieveError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "invalid_client", re.ErrorCode)
}
