package mockserver_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

const tokenPath = "/realms/acme/protocol/openid-connect/token"

// decideDPoP posts an authorize request with the DPoP scheme and the given
// proof ("" for none).
func decideDPoP(t *testing.T, srv *mockservertest.Server, scheme, token, proof string) servertest.Result {
	t.Helper()
	h := http.Header{"Authorization": {scheme + " " + token}}
	if proof != "" {
		h.Set("DPoP", proof)
	}
	return servertest.Send(t, srv, http.MethodPost, authorizePath, "application/json",
		strings.NewReader(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`), h)
}

func TestDPoPBoundTokens(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()))
	signer := newKey(t)
	other := newKey(t)

	res := servertest.DPoPToken(t, srv, signer, "")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.JSON(t)
	require.Equal(t, "DPoP", body["token_type"])
	token := body["access_token"].(string)
	tok := parseJWT(t, token, []jose.SignatureAlgorithm{jose.RS256})
	var claims struct {
		Cnf struct {
			JKT string `json:"jkt"`
		} `json:"cnf"`
	}
	require.NoError(t, tok.UnsafeClaimsWithoutVerification(&claims))
	require.Equal(t, signer.Thumbprint(), claims.Cnf.JKT)

	proof := func(s *dpop.Signer, method, u string) string {
		p := proofOf(t, s, method, u, token, "")
		return p
	}

	good := proof(signer, http.MethodPost, srv.URL+authorizePath)
	res = decideDPoP(t, srv, "DPoP", token, good)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, "GRANT", res.JSON(t)["status"])

	minted := srv.Token("acme", "alice", mockserver.TokenDPoPBinding(signer.Thumbprint()))
	p := proofOf(t, signer, http.MethodPost, srv.URL+authorizePath, minted, "")
	res = decideDPoP(t, srv, "DPoP", minted, p)
	require.Equal(t, http.StatusOK, res.Status, "IssueToken's binding works the same: %s", res.Body)

	cases := []struct {
		name, scheme, proof, wantChallenge string
	}{
		{"replayed proof", "DPoP", good, `DPoP error="invalid_dpop_proof"`},
		{"proof for another URL", "DPoP", proof(signer, http.MethodPost, srv.URL+"/realms/acme/authorization-decision-provider/get-organizations"), `DPoP error="invalid_dpop_proof"`},
		{"proof for another method", "DPoP", proof(signer, http.MethodGet, srv.URL+authorizePath), `DPoP error="invalid_dpop_proof"`},
		{"missing proof", "DPoP", "", `DPoP error="invalid_dpop_proof"`},
		{"proof by another key", "DPoP", proof(other, http.MethodPost, srv.URL+authorizePath), `DPoP error="invalid_token"`},
		{"bound token sent as Bearer", "Bearer", proof(signer, http.MethodPost, srv.URL+authorizePath), `DPoP realm="acme", algs=`},
		{"bound token sent as Bearer without proof", "Bearer", "", `error="invalid_token"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := decideDPoP(t, srv, tc.scheme, token, tc.proof)
			require.Equal(t, http.StatusUnauthorized, res.Status, string(res.Body))
			require.Contains(t, res.Header.Get("WWW-Authenticate"), tc.wantChallenge)
			require.Equal(t, "Unauthorized", res.JSON(t)["error"])
			require.NotContains(t, string(res.Body), token)
		})
	}

	t.Run("unbound token sent as DPoP", func(t *testing.T) {
		bearer := srv.Token("acme", "alice")
		p := proofOf(t, signer, http.MethodPost, srv.URL+authorizePath, bearer, "")
		res := decideDPoP(t, srv, "DPoP", bearer, p)
		require.Equal(t, http.StatusUnauthorized, res.Status)
		require.Contains(t, res.Header.Get("WWW-Authenticate"), `DPoP realm="acme"`)
	})
	// A token request that carries any DPoP line has its proof checked
	// over every line, as a protected route does: an empty first line
	// before a valid proof got an unbound Bearer token (a-dpop9).
	elsewhere := proofOf(t, signer, http.MethodPost, srv.URL+"/elsewhere", "", "")
	valid := func() string { // a proof servertest.DPoPToken's request would carry
		p := proofOf(t, signer, http.MethodPost, srv.URL+tokenPath, "", "")
		return p
	}
	for name, lines := range map[string]func() []string{
		"bad proof at the token endpoint":          func() []string { return []string{elsewhere} },
		"an empty DPoP line before a valid proof":  func() []string { return []string{"", valid()} },
		"an empty DPoP line at the token endpoint": func() []string { return []string{""} },
		"two valid proofs at the token endpoint": func() []string {
			return []string{proof(signer, http.MethodPost, srv.URL+tokenPath), proof(signer, http.MethodPost, srv.URL+tokenPath)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			res := servertest.TokenRequest(t, srv, "acme", url.Values{"grant_type": {"client_credentials"}, "client_id": {"orders-api"},
				"client_secret": {"orders-secret"}}, http.Header{"Dpop": lines()})
			require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
			require.Equal(t, "invalid_dpop_proof", res.JSON(t)["error"])
		})
	}
	t.Run("discovery lists the proof algorithms", func(t *testing.T) {
		doc := servertest.Send(t, srv, http.MethodGet, "/realms/acme/.well-known/openid-configuration", "", nil, nil).JSON(t)
		require.Contains(t, doc["dpop_signing_alg_values_supported"], "ES256")
		require.Contains(t, doc["dpop_signing_alg_values_supported"], "EdDSA")
	})
}

func TestDPoPNonceFlow(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithClock(clock))
	signer := newKey(t)
	signer = signer.WithClock(clock)

	require.Equal(t, http.StatusOK, bearerCall(t, srv, http.MethodPut, "/admin/config", srv.AdminToken(), `{"dpopNonceRequired":true}`).Status)

	// Token endpoint: the first proof has no nonce and gets one.
	res := servertest.DPoPToken(t, srv, signer, "")
	require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
	require.Equal(t, "use_dpop_nonce", res.JSON(t)["error"])
	nonce := res.Header.Get("DPoP-Nonce")
	require.NotEmpty(t, nonce)
	res = servertest.DPoPToken(t, srv, signer, nonce)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, nonce, res.Header.Get("DPoP-Nonce"))
	token := res.JSON(t)["access_token"].(string)

	call := func(nonce string) servertest.Result {
		p := proofOf(t, signer, http.MethodPost, srv.URL+authorizePath, token, nonce)
		return decideDPoP(t, srv, "DPoP", token, p)
	}
	// Resource server: the same dance, with a 401 challenge.
	res = call("")
	require.Equal(t, http.StatusUnauthorized, res.Status)
	require.Contains(t, res.Header.Get("WWW-Authenticate"), `DPoP error="use_dpop_nonce"`)
	require.Equal(t, nonce, res.Header.Get("DPoP-Nonce"))
	res = call(nonce)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, nonce, res.Header.Get("DPoP-Nonce"), "successful responses carry the nonce too")

	// Nonces rotate: after one lifetime the old nonce is still accepted and
	// a new one is announced; after two it is refused.
	now.Add(int64(61 * time.Second))
	res = call(nonce)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	rotated := res.Header.Get("DPoP-Nonce")
	require.NotEqual(t, nonce, rotated)
	now.Add(int64(61 * time.Second))
	res = call(nonce)
	require.Equal(t, http.StatusUnauthorized, res.Status)
	require.Contains(t, res.Header.Get("WWW-Authenticate"), `error="use_dpop_nonce"`)
	fresh := res.Header.Get("DPoP-Nonce")
	require.NotEmpty(t, fresh)
	res = call(fresh)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))

	// Turning the requirement off lets proofs without nonces through again.
	require.Equal(t, http.StatusOK, bearerCall(t, srv, http.MethodPut, "/admin/config", srv.AdminToken(), `{}`).Status)
	res = call("")
	require.Equal(t, http.StatusOK, res.Status)
	require.Empty(t, res.Header.Get("DPoP-Nonce"))
}

// newKey is a new DPoP key, failing the test on an error.
func newKey(t *testing.T) *dpop.Signer {
	t.Helper()
	return testkit.Must(dpop.GenerateKey())(t)
}

// proofOf is signer's proof for method, u, token and nonce, failing the
// test on an error.
func proofOf(t *testing.T, signer *dpop.Signer, method, u, token, nonce string) string {
	t.Helper()
	return testkit.Must(signer.Proof(method, u, token, nonce))(t)
}

// parseURL is url.Parse, failing the test on an error.
func parseURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	return testkit.Must(url.Parse(raw))(t)
}

// ed25519Proof is a proof as oauth4webapi and openid-client make it for an
// Ed25519 key: the algorithm named "Ed25519" (RFC 9864), signed by hand.
func ed25519Proof(t *testing.T, key ed25519.PrivateKey, method, u, token string) string {
	t.Helper()
	enc := func(v any) string {
		b := testkit.Must(json.Marshal(v))(t)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	claims := map[string]any{"jti": rand.Text(),
		"htm": method, "htu": u, "iat": time.Now().Unix()}
	if token != "" {
		claims["ath"] = dpop.TokenHash(token)
	}
	input := enc(map[string]any{"typ": "dpop+jwt", "alg": "Ed25519", "jwk": map[string]any{
		"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(key.Public().(ed25519.PublicKey))}}) + "." + enc(claims)
	return input + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(input)))
}

// TestDPoPWithEd25519AlgorithmName: a client that names its Ed25519
// algorithm "Ed25519" gets a bound token and uses it; the server advertises
// both names in discovery and in its challenge. Such proofs were refused
// with "algorithm not allowed".
func TestDPoPWithEd25519AlgorithmName(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(servertest.DPoPFixture()))
	_, key := testkit.Must2(ed25519.GenerateKey(nil))(t)
	res := servertest.TokenRequest(t, srv, "acme", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"alice"}, "password": {"alice-pw"}}, http.Header{"Dpop": {ed25519Proof(t, key, http.MethodPost, srv.URL+tokenPath, "")}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body := res.JSON(t)
	require.Equal(t, "DPoP", body["token_type"])
	token := body["access_token"].(string)

	res = decideDPoP(t, srv, "DPoP", token, ed25519Proof(t, key, http.MethodPost, srv.URL+authorizePath, token))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, "GRANT", res.JSON(t)["status"])

	doc := servertest.Send(t, srv, http.MethodGet, "/realms/acme/.well-known/openid-configuration", "", nil, nil).JSON(t)
	require.Subset(t, doc["dpop_signing_alg_values_supported"], []any{"EdDSA", "Ed25519"})
	res = decideDPoP(t, srv, "DPoP", token, "")
	require.Contains(t, res.Header.Get("WWW-Authenticate"), `algs="ES256 ES384 PS256 RS256 EdDSA Ed25519"`)
}
