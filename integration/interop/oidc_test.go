package interop_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
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

// TestGoOIDCVerifiesAccessTokens: a Go resource server verifies access
// tokens as it does Keycloak's, with go-oidc's Verifier built from the
// discovery document: a user's token (password grant), a service
// account's (client_credentials) and a DPoP-bound one. Access tokens are
// RS256 by default, as Keycloak's are; with WithAccessTokenAlgorithm
// ("ES256") discovery lists ES256 too and the JWKS has its key. go-oidc
// refused every ES256 access token when discovery listed RS256 only.
func TestGoOIDCVerifiesAccessTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		alg      string
		opts     []mockserver.Option
		wantAlgs []string
	}{
		{"default", nil, []string{"RS256"}},
		{"ES256", []mockserver.Option{mockserver.WithAccessTokenAlgorithm("ES256")}, []string{"RS256", "ES256"}},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			t.Parallel()
			srv := mockservertest.Start(t, append(tc.opts, mockserver.WithFixture(servertest.DPoPFixture()))...)
			ctx := oidc.ClientContext(t.Context(), srv.Client())
			provider := testkit.Must(oidc.NewProvider(ctx, srv.URL+"/realms/acme"))(t)
			var meta struct {
				IDTokenAlgs []string `json:"id_token_signing_alg_values_supported"`
			}
			require.NoError(t, provider.Claims(&meta))
			require.Equal(t, tc.wantAlgs, meta.IDTokenAlgs)

			user := testkit.Must((&oauth2.Config{ClientID: "admin-cli", Endpoint: provider.Endpoint()}).PasswordCredentialsToken(ctx, "alice", "alice-pw"))(t)
			sa := testkit.Must((&clientcredentials.Config{ClientID: "orders-api", ClientSecret: "orders-secret", TokenURL: provider.Endpoint().TokenURL}).Token(ctx))(t)
			signer := testkit.Must(dpop.GenerateKey())(t)
			bound := servertest.DPoPToken(t, srv, signer, "")
			require.Equal(t, http.StatusOK, bound.Status, string(bound.Body))
			require.Equal(t, "DPoP", bound.JSON(t)["token_type"])

			for _, c := range []struct {
				name, raw, client, user string
			}{
				{"user", user.AccessToken, "admin-cli", "alice"},
				{"service account", sa.AccessToken, "orders-api", "service-account-orders-api"},
				{"DPoP-bound", bound.JSON(t)["access_token"].(string), "admin-cli", "alice"},
				{"IssueToken", srv.Token("acme", "bob"), "admin-cli", "bob"},
			} {
				t.Run(c.name, func(t *testing.T) {
					tok := testkit.Must(provider.Verifier(&oidc.Config{ClientID: c.client}).Verify(ctx, c.raw))(t)
					var claims struct {
						Username string `json:"preferred_username"`
						AZP      string `json:"azp"`
					}
					require.NoError(t, tok.Claims(&claims))
					require.Equal(t, c.user, claims.Username)
					require.Equal(t, c.client, claims.AZP)
				})
			}
		})
	}
}

// TestAccessTokenAlgorithmOption: New refuses an algorithm it does not
// sign with, naming the option.
func TestAccessTokenAlgorithmOption(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"HS256", "es256", "PS256", "none"} {
		_, err := mockserver.New(mockserver.WithAccessTokenAlgorithm(alg))
		require.ErrorContains(t, err, "WithAccessTokenAlgorithm", alg)
	}
	for _, alg := range []string{"", "RS256", "ES256"} {
		testkit.Must(mockserver.New(mockserver.WithAccessTokenAlgorithm(alg)))(t, alg)
	}
}

// TestGoOIDCUserInfo: go-oidc's UserInfo reads the userinfo endpoint
// discovery names, with tokens x/oauth2 got by the password and client
// credentials grants, and x/oauth2's token is refused everywhere once the
// client revokes it at the revocation endpoint discovery names (x/oauth2
// has no revocation call of its own: the form is RFC 7009's). go-oidc
// used to fail with "user info endpoint is not supported by this
// provider".
func TestGoOIDCUserInfo(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()))
	ctx := oidc.ClientContext(t.Context(), srv.Client())
	provider := testkit.Must(oidc.NewProvider(ctx, srv.URL+"/realms/acme"))(t)
	require.Equal(t, srv.URL+"/realms/acme/protocol/openid-connect/userinfo", provider.UserInfoEndpoint())
	var meta struct {
		Revocation    string `json:"revocation_endpoint"`
		Introspection string `json:"introspection_endpoint"`
	}
	require.NoError(t, provider.Claims(&meta))

	conf := oauth2.Config{ClientID: "admin-cli", Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email"}}
	user := testkit.Must(conf.PasswordCredentialsToken(ctx, "alice", "alice-pw"))(t)
	info := testkit.Must(provider.UserInfo(ctx, oauth2.StaticTokenSource(user)))(t)
	require.Equal(t, "alice@acme.test", info.Email)
	id := testkit.Must(provider.Verifier(&oidc.Config{ClientID: "admin-cli"}).Verify(ctx, user.Extra("id_token").(string)))(t)
	require.Equal(t, id.Subject, info.Subject, "the ID token's subject")
	var claims struct {
		Username string `json:"preferred_username"`
	}
	require.NoError(t, info.Claims(&claims))
	require.Equal(t, "alice", claims.Username)

	sa := testkit.Must((&clientcredentials.Config{ClientID: "orders-api", ClientSecret: "orders-secret", TokenURL: provider.Endpoint().TokenURL}).Token(ctx))(t)
	info = testkit.Must(provider.UserInfo(ctx, oauth2.StaticTokenSource(sa)))(t)
	require.NoError(t, info.Claims(&claims))
	require.Equal(t, "service-account-orders-api", claims.Username)

	// The client revokes its token: userinfo refuses it, introspection
	// calls it inactive.
	res := servertest.FormPost(t, srv, strings.TrimPrefix(meta.Revocation, srv.URL), url.Values{"client_id": {"admin-cli"}, "token": {user.AccessToken}}, nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	_, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(user))
	require.ErrorContains(t, err, "401")
	res = servertest.FormPost(t, srv, strings.TrimPrefix(meta.Introspection, srv.URL), url.Values{"token": {user.AccessToken}},
		http.Header{"Authorization": {"Basic " + basicCredentials("orders-api", "orders-secret")}})
	require.Equal(t, map[string]any{"active": false}, res.JSON(t))
	testkit.Must(provider.UserInfo(ctx, oauth2.StaticTokenSource(sa)))(t, "another token is untouched")
}

// basicCredentials is the HTTP Basic credentials of id and secret.
func basicCredentials(id, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(id + ":" + secret))
}

// TestGoOIDCResourceServerChecksTyp: go-oidc's Verifier checks a token's
// signature, issuer, audience and expiry, not its type: it takes the ID
// token of a sign-in as it takes the access token, as it does with
// Keycloak's tokens. The check docs/reference-server.md gives a resource
// server, typ "Bearer" after Verify, tells the two apart: the server's own
// routes refuse the ID token too.
func TestGoOIDCResourceServerChecksTyp(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()))
	ctx := oidc.ClientContext(t.Context(), srv.Client())
	provider := testkit.Must(oidc.NewProvider(ctx, srv.URL+"/realms/acme"))(t)
	tok, err := (&oauth2.Config{ClientID: "admin-cli", Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID}}).
		PasswordCredentialsToken(ctx, "alice", "alice-pw")
	require.NoError(t, err)
	verifier := provider.Verifier(&oidc.Config{ClientID: "admin-cli"})
	typ := func(raw string) string {
		t.Helper()
		verified := testkit.Must(verifier.Verify(ctx, raw))(t, "go-oidc's Verifier takes both kinds of token")
		var claims struct {
			Typ string `json:"typ"`
		}
		require.NoError(t, verified.Claims(&claims))
		return claims.Typ
	}
	require.Equal(t, "Bearer", typ(tok.AccessToken))
	idToken := tok.Extra("id_token").(string)
	require.Equal(t, "ID", typ(idToken), "the typ check refuses the ID token")
	require.Equal(t, http.StatusUnauthorized, bearerGet(t, srv, userinfoPath, idToken).Status)
}
