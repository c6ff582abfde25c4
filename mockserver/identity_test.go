package mockserver_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestDiscovery: the OpenID Provider Metadata and the RFC 8414 metadata
// are truthful. Every endpoint they name answers (it used to name an
// authorization endpoint that answered 404), what Discovery 1.0 makes
// mandatory is there (authorization_endpoint and response_types_supported
// were missing or empty), RS256 included (it listed only ES256), and the
// code flow they announce is the one the server implements (TestAuthCodeErrors
// redeems its codes, and refuses what the flow refuses).
func TestDiscovery(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.IdentityFixture()))
	iss := srv.URL + "/realms/acme"
	oidc := servertest.Send(t, srv, http.MethodGet, "/realms/acme/.well-known/openid-configuration", "", nil, nil)
	require.Equal(t, http.StatusOK, oidc.Status)
	oauth := servertest.Send(t, srv, http.MethodGet, "/.well-known/oauth-authorization-server/realms/acme", "", nil, nil)
	require.Equal(t, http.StatusOK, oauth.Status)

	for name, doc := range map[string]map[string]any{"openid-configuration": oidc.JSON(t), "oauth-authorization-server": oauth.JSON(t)} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, iss, doc["issuer"])
			require.Equal(t, iss+"/protocol/openid-connect/token", doc["token_endpoint"])
			require.Equal(t, iss+"/protocol/openid-connect/certs", doc["jwks_uri"])
			require.Equal(t, iss+"/protocol/openid-connect/auth", doc["authorization_endpoint"])
			require.Equal(t, []any{"code"}, doc["response_types_supported"])
			require.Equal(t, []any{"query"}, doc["response_modes_supported"])
			require.Equal(t, []any{"S256"}, doc["code_challenge_methods_supported"])
			require.ElementsMatch(t, []any{"authorization_code", "client_credentials", "password"}, doc["grant_types_supported"])
			require.ElementsMatch(t, []any{"client_secret_basic", "client_secret_post", "none"}, doc["token_endpoint_auth_methods_supported"])
			require.Subset(t, doc["dpop_signing_alg_values_supported"], []any{"ES256", "EdDSA", "Ed25519"})
			require.Contains(t, doc["scopes_supported"], "openid")
			require.Equal(t, iss+"/protocol/openid-connect/revoke", doc["revocation_endpoint"])
			require.Equal(t, iss+"/protocol/openid-connect/token/introspect", doc["introspection_endpoint"])
			require.ElementsMatch(t, []any{"client_secret_basic", "client_secret_post", "none"}, doc["revocation_endpoint_auth_methods_supported"])
			require.ElementsMatch(t, []any{"client_secret_basic", "client_secret_post"}, doc["introspection_endpoint_auth_methods_supported"],
				"a public client may not introspect")
			// Every URL the document names answers something other than 404.
			for k, v := range doc {
				u, ok := v.(string)
				if !ok || !strings.HasPrefix(u, "http") || k == "issuer" {
					continue
				}
				method := http.MethodGet
				switch k {
				case "token_endpoint", "revocation_endpoint", "introspection_endpoint":
					method = http.MethodPost
				}
				res := servertest.Send(t, srv, method, strings.TrimPrefix(u, srv.URL), "application/x-www-form-urlencoded", strings.NewReader(""), nil)
				require.NotEqual(t, http.StatusNotFound, res.Status, "%s %s", k, u)
				require.NotEqual(t, http.StatusMethodNotAllowed, res.Status, "%s %s", k, u)
			}
		})
	}
	doc := oidc.JSON(t)
	require.Equal(t, []any{"public"}, doc["subject_types_supported"])
	require.Equal(t, iss+"/protocol/openid-connect/userinfo", doc["userinfo_endpoint"])
	require.NotContains(t, oauth.JSON(t), "userinfo_endpoint", "an OpenID Connect endpoint")
	require.Equal(t, []any{"RS256"}, doc["id_token_signing_alg_values_supported"])
	require.NotContains(t, oauth.JSON(t), "id_token_signing_alg_values_supported")

	for _, path := range []string{"/realms/nowhere/.well-known/openid-configuration", "/.well-known/oauth-authorization-server/realms/nowhere"} {
		res := servertest.Send(t, srv, http.MethodGet, path, "", nil, nil)
		require.Equal(t, http.StatusNotFound, res.Status, path)
	}
}

// TestIDTokens: the password grant with scope openid answers an RS256 ID
// token that the JWKS verifies, about the same user as the access token;
// without openid, or with client_credentials, there is none, and the
// answer's scope says what was granted.
func TestIDTokens(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.IdentityFixture()))
	iss := srv.URL + "/realms/acme"
	var set jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal(servertest.Send(t, srv, http.MethodGet, "/realms/acme/protocol/openid-connect/certs", "", nil, nil).Body, &set))

	res := servertest.TokenRequest(t, srv, "acme", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"alice"}, "password": {"alice-pw"}, "scope": {"openid profile email phone"}}, nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.JSON(t)
	require.Equal(t, "openid profile email", body["scope"], "phone is not granted")
	raw, ok := body["id_token"].(string)
	require.True(t, ok, "an ID token: %s", res.Body)
	tok := parseJWT(t, raw, []jose.SignatureAlgorithm{jose.RS256})
	keys := set.Key(tok.Headers[0].KeyID)
	require.Len(t, keys, 1)
	require.Equal(t, "RS256", keys[0].Algorithm)
	var id struct {
		jwt.Claims
		Type     string `json:"typ"`
		AZP      string `json:"azp"`
		AuthTime int64  `json:"auth_time"`
		Username string `json:"preferred_username"`
		Email    string `json:"email"`
	}
	require.NoError(t, tok.Claims(keys[0].Key, &id))
	require.NoError(t, id.Validate(jwt.Expected{Issuer: iss, AnyAudience: jwt.Audience{"admin-cli"}, Time: time.Now()}))
	require.Equal(t, "admin-cli", id.AZP)
	require.Equal(t, "alice", id.Username)
	require.Equal(t, "alice@acme.test", id.Email)
	require.NotZero(t, id.AuthTime)
	access := parseJWT(t, body["access_token"].(string), []jose.SignatureAlgorithm{jose.RS256})
	var at jwt.Claims
	require.NoError(t, access.UnsafeClaimsWithoutVerification(&at))
	require.Equal(t, at.Subject, id.Subject)
	require.Equal(t, "ID", id.Type, "an ID token says so (Keycloak's typ)")
	// The ID token is signed by the key that signs access tokens: its typ
	// alone keeps it from being one.
	require.Equal(t, access.Headers[0].KeyID, tok.Headers[0].KeyID)
	require.Equal(t, http.StatusUnauthorized, bearerCall(t, srv, http.MethodPost, authorizePath, raw, `{"clientId":"orders-api","resources":[{"name":"x"}],"context":{}}`).Status,
		"an ID token is not accepted as an access token")

	for name, form := range map[string]url.Values{
		"password without openid": {"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"bob"}, "password": {"bob-pw"}, "scope": {"profile"}},
		"client credentials":      {"grant_type": {"client_credentials"}, "client_id": {"orders-api"}, "client_secret": {"orders-secret"}, "scope": {"openid"}},
	} {
		res := servertest.TokenRequest(t, srv, "acme", form, nil)
		require.Equal(t, http.StatusOK, res.Status, name)
		require.NotContains(t, res.JSON(t), "id_token", name)
		require.NotContains(t, res.JSON(t)["scope"], "openid", name)
	}
	res = servertest.TokenRequest(t, srv, "acme", url.Values{"grant_type": {"client_credentials"}, "client_id": {"orders-api"}, "client_secret": {"orders-secret"}}, nil)
	require.NotContains(t, res.JSON(t), "scope", "no scope asked, none answered")
}

// TestJWKSVerifiesIssuedTokens: the JWKS lists every key in use, each with
// its alg and kid, and verifies the access tokens of the server's
// algorithm, RS256 by default (as Keycloak signs them) or ES256 with
// WithAccessTokenAlgorithm.
func TestJWKSVerifiesIssuedTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		alg      string
		opts     []mockserver.Option
		wantAlgs []string // the JWKS's keys' algorithms
	}{
		{"RS256", nil, []string{"RS256"}},
		{"ES256", []mockserver.Option{mockserver.WithAccessTokenAlgorithm("ES256")}, []string{"RS256", "ES256"}},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			t.Parallel()
			srv := mockservertest.Start(t, append(tc.opts, mockserver.WithFixture(servertest.IdentityFixture()))...)
			res := servertest.Send(t, srv, http.MethodGet, "/realms/acme/protocol/openid-connect/certs", "", nil, nil)
			require.Equal(t, http.StatusOK, res.Status)
			var set jose.JSONWebKeySet
			require.NoError(t, json.Unmarshal(res.Body, &set))
			var algs []string
			for _, k := range set.Keys {
				require.True(t, k.IsPublic())
				require.NotEmpty(t, k.KeyID)
				require.Equal(t, "sig", k.Use)
				algs = append(algs, k.Algorithm)
			}
			require.ElementsMatch(t, tc.wantAlgs, algs, "the keys in use: ID tokens are RS256")

			for name, raw := range map[string]string{
				"IssueToken": srv.Token("acme", "alice"),
				"password grant": servertest.TokenRequest(t, srv, "acme", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
					"username": {"alice"}, "password": {"alice-pw"}}, nil).JSON(t)["access_token"].(string),
			} {
				t.Run(name, func(t *testing.T) {
					tok := parseJWT(t, raw, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(tc.alg)})
					keys := set.Key(tok.Headers[0].KeyID)
					require.Len(t, keys, 1)
					require.Equal(t, tc.alg, keys[0].Algorithm)
					var claims struct {
						jwt.Claims
						Type              string `json:"typ"`
						AZP               string `json:"azp"`
						PreferredUsername string `json:"preferred_username"`
						RealmAccess       struct {
							Roles []string `json:"roles"`
						} `json:"realm_access"`
						ResourceAccess map[string]struct {
							Roles []string `json:"roles"`
						} `json:"resource_access"`
					}
					require.NoError(t, tok.Claims(keys[0].Key, &claims))
					require.NoError(t, claims.Validate(jwt.Expected{Issuer: srv.URL + "/realms/acme", Time: time.Now()}))
					require.NotEmpty(t, claims.Subject)
					require.NotEmpty(t, claims.ID)
					require.NotNil(t, claims.IssuedAt)
					require.Equal(t, "Bearer", claims.Type)
					require.Equal(t, "admin-cli", claims.AZP)
					require.Equal(t, "alice", claims.PreferredUsername)
					require.Contains(t, claims.RealmAccess.Roles, "realm-admin")
					require.Equal(t, []string{"manage-realm"}, claims.ResourceAccess["realm-management"].Roles)
				})
			}

			// Another realm's keys do not verify acme's tokens.
			other := servertest.Send(t, srv, http.MethodGet, "/realms/master/protocol/openid-connect/certs", "", nil, nil)
			var otherSet jose.JSONWebKeySet
			require.NoError(t, json.Unmarshal(other.Body, &otherSet))
			tok := parseJWT(t, srv.Token("acme", "bob"), []jose.SignatureAlgorithm{jose.SignatureAlgorithm(tc.alg)})
			for _, k := range otherSet.Keys {
				var c jwt.Claims
				require.Error(t, tok.Claims(k.Key, &c))
			}
		})
	}
}

func TestTokenEndpoint(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.IdentityFixture()))
	basic := func(id, secret string) http.Header {
		h := http.Header{}
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
		h.Set("Authorization", r.Header.Get("Authorization"))
		return h
	}
	cases := []struct {
		name       string
		form       url.Values
		header     http.Header
		wantStatus int
		wantError  string
		wantUser   string
	}{
		{"client credentials in the form", url.Values{"grant_type": {"client_credentials"}, "client_id": {"orders-api"}, "client_secret": {"orders-secret"}},
			nil, 200, "", "service-account-orders-api"},
		{"client credentials with HTTP Basic", url.Values{"grant_type": {"client_credentials"}}, basic("orders-api", "orders-secret"),
			200, "", "service-account-orders-api"},
		{"platform admin client", url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {"admin-secret"}},
			nil, 200, "", ""},
		{"password with admin-cli", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"bob"}, "password": {"bob-pw"}},
			nil, 200, "", "bob"},
		{"password with a confidential client", url.Values{"grant_type": {"password"}, "client_id": {"orders-api"}, "client_secret": {"orders-secret"},
			"username": {"bob"}, "password": {"bob-pw"}}, nil, 200, "", "bob"},
		{"wrong secret", url.Values{"grant_type": {"client_credentials"}, "client_id": {"orders-api"}, "client_secret": {"nope"}},
			nil, 401, "invalid_client", ""},
		{"wrong secret with HTTP Basic", url.Values{"grant_type": {"client_credentials"}}, basic("orders-api", "nope"), 401, "invalid_client", ""},
		{"unknown client", url.Values{"grant_type": {"client_credentials"}, "client_id": {"ghost"}, "client_secret": {"x"}}, nil, 401, "invalid_client", ""},
		{"a parameter twice", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"bob", "alice"}, "password": {"bob-pw"}},
			nil, 400, "invalid_request", ""},
		{"no client", url.Values{"grant_type": {"password"}, "username": {"bob"}, "password": {"bob-pw"}}, nil, 401, "invalid_client", ""},
		{"confidential client without secret", url.Values{"grant_type": {"password"}, "client_id": {"orders-api"}, "username": {"bob"}, "password": {"bob-pw"}},
			nil, 401, "invalid_client", ""},
		{"wrong password", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"bob"}, "password": {"nope"}},
			nil, 400, "invalid_grant", ""},
		{"unknown user", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"zed"}, "password": {"x"}},
			nil, 400, "invalid_grant", ""},
		{"service account by password", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"service-account-orders-api"}, "password": {""}},
			nil, 400, "invalid_request", ""},
		{"public client credentials", url.Values{"grant_type": {"client_credentials"}, "client_id": {"spa"}}, nil, 400, "unauthorized_client", ""},
		{"unsupported grant", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "client_id": {"admin-cli"}}, nil, 400, "unsupported_grant_type", ""},
		{"code grant without code", url.Values{"grant_type": {"authorization_code"}, "client_id": {"admin-cli"}, "redirect_uri": {"https://app.test/cb"}}, nil, 400, "invalid_request", ""},
		{"unknown code", url.Values{"grant_type": {"authorization_code"}, "client_id": {"admin-cli"}, "code": {"nope"}, "redirect_uri": {"https://app.test/cb"}}, nil, 400, "invalid_grant", ""},
		{"missing grant", url.Values{"client_id": {"admin-cli"}}, nil, 400, "invalid_request", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := servertest.TokenRequest(t, srv, "acme", tc.form, tc.header)
			if tc.name == "platform admin client" {
				res = servertest.TokenRequest(t, srv, "master", tc.form, tc.header)
			}
			require.Equal(t, tc.wantStatus, res.Status, string(res.Body))
			body := res.JSON(t)
			require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
			if tc.wantError != "" {
				require.Equal(t, tc.wantError, body["error"])
				require.NotEmpty(t, body["error_description"])
				if tc.header != nil && tc.wantStatus == 401 {
					require.Equal(t, `Basic realm="acme"`, res.Header.Get("WWW-Authenticate"))
				}
				return
			}
			require.Equal(t, "Bearer", body["token_type"])
			require.EqualValues(t, 300, body["expires_in"])
			raw := body["access_token"].(string)
			tok := parseJWT(t, raw, []jose.SignatureAlgorithm{jose.RS256})
			var c struct {
				PreferredUsername string `json:"preferred_username"`
			}
			require.NoError(t, tok.UnsafeClaimsWithoutVerification(&c))
			if tc.wantUser != "" {
				require.Equal(t, tc.wantUser, c.PreferredUsername)
			}
		})
	}

	t.Run("not a form", func(t *testing.T) {
		t.Parallel()
		res := servertest.Send(t, srv, http.MethodPost, "/realms/acme/protocol/openid-connect/token", "application/json", strings.NewReader(`{}`), nil)
		require.Equal(t, http.StatusBadRequest, res.Status)
		require.Equal(t, "invalid_request", res.JSON(t)["error"])
	})
	t.Run("unknown realm", func(t *testing.T) {
		t.Parallel()
		res := servertest.TokenRequest(t, srv, "nowhere", url.Values{"grant_type": {"password"}}, nil)
		require.Equal(t, http.StatusNotFound, res.Status)
	})
}

// parseJWT is jwt.ParseSigned, failing the test on an error.
func parseJWT(t *testing.T, raw string, algs []jose.SignatureAlgorithm) *jwt.JSONWebToken {
	t.Helper()
	tok, err := jwt.ParseSigned(raw, algs)
	require.NoError(t, err)
	return tok
}
