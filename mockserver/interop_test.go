package mockserver_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/orgauthz/orgauthz/dpop"
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
			srv := mockservertest.Start(t, append(tc.opts, mockserver.WithFixture(dpopFixture()))...)
			ctx := oidc.ClientContext(t.Context(), srv.Client())
			provider, err := oidc.NewProvider(ctx, srv.URL+"/realms/acme")
			require.NoError(t, err)
			var meta struct {
				IDTokenAlgs []string `json:"id_token_signing_alg_values_supported"`
			}
			require.NoError(t, provider.Claims(&meta))
			require.Equal(t, tc.wantAlgs, meta.IDTokenAlgs)

			user, err := (&oauth2.Config{ClientID: "admin-cli", Endpoint: provider.Endpoint()}).PasswordCredentialsToken(ctx, "alice", "alice-pw")
			require.NoError(t, err)
			sa, err := (&clientcredentials.Config{ClientID: "orders-api", ClientSecret: "orders-secret", TokenURL: provider.Endpoint().TokenURL}).Token(ctx)
			require.NoError(t, err)
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			bound := dpopToken(t, srv, signer, "")
			require.Equal(t, http.StatusOK, bound.status, string(bound.body))
			require.Equal(t, "DPoP", bound.json(t)["token_type"])

			for _, c := range []struct {
				name, raw, client, user string
			}{
				{"user", user.AccessToken, "admin-cli", "alice"},
				{"service account", sa.AccessToken, "orders-api", "service-account-orders-api"},
				{"DPoP-bound", bound.json(t)["access_token"].(string), "admin-cli", "alice"},
				{"IssueToken", srv.Token("acme", "bob"), "admin-cli", "bob"},
			} {
				t.Run(c.name, func(t *testing.T) {
					tok, err := provider.Verifier(&oidc.Config{ClientID: c.client}).Verify(ctx, c.raw)
					require.NoError(t, err)
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
		_, err := mockserver.New(mockserver.WithAccessTokenAlgorithm(alg))
		require.NoError(t, err, alg)
	}
}

var _ = url.Values{}
