package pep_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

type proofClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath"`
	Nonce string `json:"nonce"`
}

// decodeProof reads a proof's header and claims without verifying it (the
// gateway verifies it).
func decodeProof(t *testing.T, proof string) (header map[string]any, claims proofClaims) {
	t.Helper()
	parts := strings.Split(proof, ".")
	require.Len(t, parts, 3, "a compact JWS")
	h := testkit.Must(base64.RawURLEncoding.DecodeString(parts[0]))(t)
	require.NoError(t, json.Unmarshal(h, &header))
	c := testkit.Must(base64.RawURLEncoding.DecodeString(parts[1]))(t)
	require.NoError(t, json.Unmarshal(c, &claims))
	return header, claims
}

func TestDPoPRequest(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c, rec, tok := g.dpopClient(t, "alice", nil)
	d := checked(t, c, "orders", "read")
	requireGatewayDecision(t, d, pep.Grant) // the server verified the proof

	r := g.last(t)
	assert.Equal(t, "DPoP "+tok, r.Authorization)
	header, claims := decodeProof(t, r.Header.Get("DPoP"))
	assert.Equal(t, "dpop+jwt", header["typ"])
	assert.Equal(t, "ES256", header["alg"])
	assert.Equal(t, "POST", claims.HTM)
	assert.Equal(t, g.URL+"/realms/acme/authorization-decision-provider/authorize", claims.HTU)
	assert.Equal(t, dpop.TokenHash(tok), claims.ATH)
	assert.Empty(t, claims.Nonce)

	assert.Equal(t, []events.Kind{events.TokenSet}, rec.kinds())
	assert.Equal(t, "DPoP", rec.evs[0].TokenType)

	oc := testkit.Must(c.Organizations(t.Context()))(t)
	assert.Equal(t, subject(t, tok), oc.UserID)
	_, claims = decodeProof(t, g.last(t).Header.Get("DPoP"))
	assert.Equal(t, g.URL+"/realms/acme/authorization-decision-provider/get-organizations", claims.HTU)
}

func TestDPoPProofHTUIsNormalised(t *testing.T) {
	t.Parallel()
	signer := testkit.Must(dpop.GenerateKey())(t)
	var htu atomic.Value
	mock := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		_, claims := decodeProof(t, r.Header.Get("DPoP"))
		htu.Store(claims.HTU)
		return cannedResponse(r, 200, []byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`)), nil
	})
	c := mustPep(t, "HTTPS://Gateway.EXAMPLE.com:443/Base", testRealm, testClient, pep.WithHTTPClient(&http.Client{Transport: mock}))
	c.SetDPoPToken("dpop-bound-token", signer)
	d := checked(t, c, "orders", "read")
	require.True(t, d.Allowed())
	assert.Equal(t, "https://gateway.example.com/Base/realms/acme/authorization-decision-provider/authorize", htu.Load(),
		"scheme and host lower-cased, default port dropped, path kept")
}

// TestDPoPFreshProofPerAttempt: the hook fails the first two attempts; the
// server, which refuses a proof it has seen, answers the third.
func TestDPoPFreshProofPerAttempt(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c, _, _ := g.dpopClient(t, "alice", nil, fastRetry, pep.WithCache(0, 0, 0))
	g.setHook(failFirst(nil, 503, 503))
	d := checked(t, c, "orders", "read")
	requireGatewayDecision(t, d, pep.Grant)
	checked(t, c, "orders", "read")

	reqs := g.received()
	require.Len(t, reqs, 4)
	jtis := map[string]bool{}
	for _, r := range reqs {
		require.Len(t, r.Header.Values("DPoP"), 1)
		_, claims := decodeProof(t, r.Header.Get("DPoP"))
		assert.NotEmpty(t, claims.JTI)
		jtis[claims.JTI] = true
	}
	assert.Len(t, jtis, 4, "every attempt, retries included, has its own proof")
}

// latestNonce returns the last DPoP-Nonce among the answers to reqs.
func latestNonce(reqs []sentRequest) string {
	nonce := ""
	for _, r := range reqs {
		if n := r.Answer.Get("DPoP-Nonce"); n != "" {
			nonce = n
		}
	}
	return nonce
}

// TestDPoPNonceChallenge: whichever way the gateway asks for a DPoP nonce,
// the call is resent once with the nonce it gave and granted, the token
// stays (no tokenExpired), and the nonce is used at once by the next call.
// The forms in the body are a-dpop13 F2: a 401 whose challenge names no
// error, or that has none, was taken as refusing the token (retired,
// purged on every replica, tokenExpired), and the 400 was not resent.
func TestDPoPNonceChallenge(t *testing.T) {
	t.Parallel()
	// askUntilN1 makes the hook answer in the reference server's place,
	// with status, challenge ("" for none) and body, until the proof
	// carries n1: the reference server asks only with a 401 and a
	// challenge.
	askUntilN1 := func(status int, challenge string, body any) func(*testing.T, *reference) {
		return func(_ *testing.T, g *reference) {
			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				if testkit.ProofNonce(r.Header.Get("DPoP")) == "n1" {
					return false
				}
				if challenge != "" {
					w.Header().Set("WWW-Authenticate", challenge)
				}
				w.Header().Set("DPoP-Nonce", "n1")
				writeJSON(w, status, body)
				return true
			})
		}
	}
	inBody := map[string]string{"error": "use_dpop_nonce", "error_description": "nonce required in the DPoP proof"}
	tests := []struct {
		name string
		// setup makes the gateway demand a nonce in one of its forms.
		setup func(t *testing.T, g *reference)
	}{
		{
			name:  "401 from the proof verifier",
			setup: func(t *testing.T, g *reference) { g.configure(t, `{"dpopNonceRequired": true}`) },
		},
		{
			name: "400 with a DPoP challenge",
			setup: askUntilN1(http.StatusBadRequest, `DPoP error="use_dpop_nonce", error_description="nonce required"`,
				map[string]string{"error": "Bad Request", "message": "use the nonce"}),
		},
		{name: "401 asking in the body under a DPoP challenge without error", setup: askUntilN1(http.StatusUnauthorized, `DPoP algs="ES256 PS256"`, inBody)},
		{name: "401 asking in the body without a challenge", setup: askUntilN1(http.StatusUnauthorized, "", inBody)},
		{name: "400 asking in the body without a challenge, as RFC 9449 section 8 has it", setup: askUntilN1(http.StatusBadRequest, "", inBody)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			tt.setup(t, g)
			c, rec, _ := g.dpopClient(t, "alice", nil, pep.WithRetry(1, time.Millisecond, time.Millisecond), pep.WithCache(0, 0, 0))

			d := checked(t, c, "orders", "read")
			requireGatewayDecision(t, d, pep.Grant)
			reqs := g.received()
			require.Len(t, reqs, 2, "one resend with the nonce")
			nonce := reqs[0].Answer.Get("DPoP-Nonce")
			require.NotEmpty(t, nonce, "the challenge carries a nonce")
			_, first := decodeProof(t, reqs[0].Header.Get("DPoP"))
			_, second := decodeProof(t, reqs[1].Header.Get("DPoP"))
			assert.Empty(t, first.Nonce)
			assert.Equal(t, nonce, second.Nonce)
			assert.NotEqual(t, first.JTI, second.JTI)
			assert.Zero(t, c.Stats().Retries, "a nonce resend is not a retry")
			assert.Equal(t, []events.Kind{events.TokenSet}, rec.kinds(), "a nonce challenge emits nothing")

			// The nonce is remembered for the origin: the next call uses
			// the latest one at once.
			d = checked(t, c, "orders", "read")
			requireGatewayDecision(t, d, pep.Grant)
			reqs = g.received()
			require.Len(t, reqs, 3)
			_, third := decodeProof(t, reqs[2].Header.Get("DPoP"))
			assert.Equal(t, latestNonce(reqs[:2]), third.Nonce)
		})
	}
}

// TestDPoPNonceResendIsOutsideTheRetryBudget: the server's nonce challenge,
// then a 503 from the hook, then the server's grant: 1 resend + 1 retry.
func TestDPoPNonceResendIsOutsideTheRetryBudget(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	g.configure(t, `{"dpopNonceRequired": true}`)
	g.setHook(func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n == 2 {
			writeError(w, http.StatusServiceUnavailable, "blip")
			return true
		}
		return false
	})
	c, _, _ := g.dpopClient(t, "alice", nil, pep.WithRetry(1, time.Millisecond, time.Millisecond))
	d := checked(t, c, "orders", "read")
	requireGatewayDecision(t, d, pep.Grant)
	reqs := g.received()
	require.Len(t, reqs, 3)
	assert.Equal(t, http.StatusUnauthorized, reqs[0].Status, "the nonce challenge")
	assert.Equal(t, uint64(1), c.Stats().Retries)
}

// TestDPoPAndBearerCacheSeparately: the same string as a Bearer token is
// another credential: sent as Bearer, refused by the server, which
// enforces the binding, and its refusal leaves the DPoP entry alone.
func TestDPoPAndBearerCacheSeparately(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c, _, tok := g.dpopClient(t, "alice", nil)
	checked(t, c, "orders", "read")
	_, err := c.Check(pep.WithToken(t.Context(), tok), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized, "the server enforces the binding")
	assert.Equal(t, "Bearer "+tok, g.last(t).Authorization)
	assert.Equal(t, 2, g.count())
	assert.Equal(t, 1, c.Stats().CacheEntries, "the Bearer refusal left the DPoP entry alone")
	d := checked(t, c, "orders", "read")
	assert.True(t, d.Cached)
}

// TestSameDPoPTokenWithoutSignerGetsNoCachedGrant: a DPoP token set
// without its signer (the documented "a nil signer makes every call fail
// with ErrNoToken") sends nothing, and the same token set again so is not
// answered from the GRANTs its identity holds in the cache.
func TestSameDPoPTokenWithoutSignerGetsNoCachedGrant(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c, _, tok := g.dpopClient(t, "alice", nil)
	d := checked(t, c, "orders", "read")
	require.True(t, d.Allowed())
	d = checked(t, c, "orders", "read")
	require.True(t, d.Cached)

	c.SetDPoPToken(tok, nil)
	d, err := c.Check(t.Context(), "orders", "read")
	assert.False(t, d.Allowed(), "a GRANT served to a DPoP token the client can no longer prove")
	require.ErrorIs(t, err, pep.ErrNoToken)
	assert.Equal(t, 1, g.count(), "nothing is sent without a signer")
}
