package pep_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

const dpopToken = "dpop-bound-token.eyJjbmYiOnsiamt0IjoiLi4uIn19.c2ln"

type proofClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath"`
	Nonce string `json:"nonce"`
}

// decodeProof reads a proof's header and claims without verifying it (the
// fake gateway verifies with dpop.Verifier).
func decodeProof(t *testing.T, proof string) (header map[string]any, claims proofClaims) {
	t.Helper()
	parts := strings.Split(proof, ".")
	require.Len(t, parts, 3, "a compact JWS")
	h, err := base64.RawURLEncoding.DecodeString(parts[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(h, &header))
	c, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(c, &claims))
	return header, claims
}

// dpopGateway returns a fake gateway where dpopToken is bound to a new key
// and may read orders, and a client holding that token.
func dpopGateway(t *testing.T, opts ...pep.Option) (*gateway, *pep.Client, *recorder) {
	t.Helper()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	g := newGateway(t)
	g.bindDPoP(dpopToken, signer.Thumbprint())
	g.grant(dpopToken, "orders", "read")
	rec := &recorder{}
	c := g.newClient(t, append([]pep.Option{pep.WithEventHandler(rec.handle)}, opts...)...)
	c.SetDPoPToken(dpopToken, signer)
	return g, c, rec
}

func TestDPoPRequest(t *testing.T) {
	t.Parallel()
	g, c, rec := dpopGateway(t)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant) // the gateway verified the proof

	r := g.last()
	assert.Equal(t, "DPoP "+dpopToken, r.Authorization)
	header, claims := decodeProof(t, r.Header.Get("DPoP"))
	assert.Equal(t, "dpop+jwt", header["typ"])
	assert.Equal(t, "ES256", header["alg"])
	assert.Equal(t, "POST", claims.HTM)
	assert.Equal(t, g.URL+"/realms/acme/authorization-decision-provider/authorize", claims.HTU)
	assert.Equal(t, dpop.TokenHash(dpopToken), claims.ATH)
	assert.Empty(t, claims.Nonce)

	assert.Equal(t, []events.Kind{events.TokenSet}, rec.kinds())
	assert.Equal(t, "DPoP", rec.evs[0].TokenType)

	oc, err := c.Organizations(t.Context())
	require.NoError(t, err)
	assert.NotEmpty(t, oc.UserID)
	_, claims = decodeProof(t, g.last().Header.Get("DPoP"))
	assert.Equal(t, g.URL+"/realms/acme/authorization-decision-provider/get-organizations", claims.HTU)
}

func TestDPoPProofHTUIsNormalised(t *testing.T) {
	t.Parallel()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	var htu atomic.Value
	mock := httpmock.NewMockTransport()
	mock.RegisterNoResponder(func(r *http.Request) (*http.Response, error) {
		_, claims := decodeProof(t, r.Header.Get("DPoP"))
		htu.Store(claims.HTU)
		return httpmock.NewStringResponse(200, `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`), nil
	})
	c, err := pep.New("HTTPS://Gateway.EXAMPLE.com:443/Base", testRealm, testClient, pep.WithHTTPClient(&http.Client{Transport: mock}))
	require.NoError(t, err)
	c.SetDPoPToken(dpopToken, signer)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	require.True(t, d.Allowed())
	assert.Equal(t, "https://gateway.example.com/Base/realms/acme/authorization-decision-provider/authorize", htu.Load(),
		"scheme and host lower-cased, default port dropped, path kept")
}

func TestDPoPFreshProofPerAttempt(t *testing.T) {
	t.Parallel()
	g, c, _ := dpopGateway(t, fastRetry, pep.WithCache(0, 0, 0))
	g.setHook(failFirst(nil, 503, 503))
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	_, err = c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)

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

func TestDPoPNonceChallenge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup makes the gateway demand nonce "n1" in one of the two
		// challenge forms.
		setup func(g *gateway)
	}{
		{
			name: "401 from the proof verifier",
			setup: func(g *gateway) {
				g.requireNonces(nonceRule{
					valid: func(n string) bool { return n == "n1" },
					next:  func() string { return "n1" },
				})
			},
		},
		{
			name: "400 with a DPoP challenge",
			setup: func(g *gateway) {
				g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
					if proofNonce(r) == "n1" {
						return false
					}
					w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce", error_description="nonce required"`)
					w.Header().Set("DPoP-Nonce", "n1")
					writeError(w, http.StatusBadRequest, "use the nonce")
					return true
				})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, c, rec := dpopGateway(t, pep.WithRetry(1, 1, 1), pep.WithCache(0, 0, 0))
			tt.setup(g)

			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			requireGatewayDecision(t, d, pep.Grant)
			reqs := g.received()
			require.Len(t, reqs, 2, "one resend with the nonce")
			_, first := decodeProof(t, reqs[0].Header.Get("DPoP"))
			_, second := decodeProof(t, reqs[1].Header.Get("DPoP"))
			assert.Empty(t, first.Nonce)
			assert.Equal(t, "n1", second.Nonce)
			assert.NotEqual(t, first.JTI, second.JTI)
			assert.Zero(t, c.Stats().Retries, "a nonce resend is not a retry")
			assert.Equal(t, []events.Kind{events.TokenSet}, rec.kinds(), "a nonce challenge emits nothing")

			// The nonce is remembered for the origin: the next call uses it
			// at once.
			d, err = c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			requireGatewayDecision(t, d, pep.Grant)
			require.Len(t, g.received(), 3)
			_, third := decodeProof(t, g.last().Header.Get("DPoP"))
			assert.Equal(t, "n1", third.Nonce)
		})
	}
}

// proofNonce returns the nonce claim of a request's proof, "" if none.
func proofNonce(r *http.Request) string {
	var claims proofClaims
	parts := strings.Split(r.Header.Get("DPoP"), ".")
	if len(parts) == 3 {
		if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			_ = json.Unmarshal(b, &claims)
		}
	}
	return claims.Nonce
}

func TestDPoPNonceChallengeIsNotLooped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		next func() func() string
		// wantSecond is the requests a second call makes, once the client
		// holds the server's latest nonce.
		wantSecond int
	}{
		{"server repeats the nonce just used", func() func() string {
			return func() string { return "n1" }
		}, 1},
		{"server sends a new nonce every time", func() func() string {
			var n atomic.Int64
			return func() string { return fmt.Sprint("n", n.Add(1)) }
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, c, rec := dpopGateway(t, fastRetry)
			g.requireNonces(nonceRule{valid: func(string) bool { return false }, next: tt.next()})

			d, err := c.Check(t.Context(), "orders", "read")
			require.ErrorIs(t, err, pep.ErrUnauthorized)
			assert.False(t, d.Allowed())
			var re *pep.ResponseError
			require.ErrorAs(t, err, &re)
			assert.Contains(t, re.Challenge, "use_dpop_nonce")
			assert.Len(t, g.received(), 2, "the request is resent once, then the answer stands")

			_, err = c.Check(t.Context(), "orders", "read")
			require.ErrorIs(t, err, pep.ErrUnauthorized)
			assert.Len(t, g.received(), 2+tt.wantSecond, "a challenge with the nonce just sent is not resent")
			assert.Equal(t, []events.Kind{events.TokenSet}, rec.kinds(), "a nonce problem is not an expired token")
		})
	}
}

func TestDPoPNonceResendIsOutsideTheRetryBudget(t *testing.T) {
	t.Parallel()
	g, c, _ := dpopGateway(t, pep.WithRetry(1, 1, 1))
	g.requireNonces(nonceRule{valid: func(n string) bool { return n == "n1" }, next: func() string { return "n1" }})
	// nonce challenge, then 503, then success: 1 resend + 1 retry.
	g.setHook(func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n == 2 {
			writeError(w, http.StatusServiceUnavailable, "blip")
			return true
		}
		return false
	})
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	assert.Len(t, g.received(), 3)
	assert.Equal(t, uint64(1), c.Stats().Retries)
}

func TestDPoPNonceFromASuccessfulAnswer(t *testing.T) {
	t.Parallel()
	g, c, _ := dpopGateway(t, pep.WithCache(0, 0, 0))
	g.setHook(func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n == 1 {
			w.Header().Set("DPoP-Nonce", "rotated")
		}
		return false
	})
	for range 2 {
		_, err := c.Check(t.Context(), "orders", "read")
		require.NoError(t, err)
	}
	_, claims := decodeProof(t, g.last().Header.Get("DPoP"))
	assert.Equal(t, "rotated", claims.Nonce, "the latest nonce of the origin is used")
}

func TestDPoPPlain401ExpiresTheToken(t *testing.T) {
	t.Parallel()
	g, c, rec := dpopGateway(t)
	g.revoke(dpopToken)
	for range 2 {
		_, err := c.Check(t.Context(), "orders", "read")
		require.ErrorIs(t, err, pep.ErrUnauthorized)
	}
	assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, rec.kinds())
	assert.Equal(t, "DPoP", rec.evs[1].TokenType)
	assert.Equal(t, 2, g.count(), "a plain 401 is not resent")
}

func TestDPoPTokenSentAsBearerIsRefused(t *testing.T) {
	t.Parallel()
	g, c, _ := dpopGateway(t)
	_, err := c.Check(pep.WithToken(t.Context(), dpopToken), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized, "the fake gateway enforces the binding")
	assert.Equal(t, "Bearer "+dpopToken, g.last().Authorization)
}

func TestSetDPoPTokenWithoutSigner(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	c := g.newClient(t)
	c.SetDPoPToken(dpopToken, nil)
	d, err := c.Check(t.Context(), "orders", "read")
	require.ErrorIs(t, err, pep.ErrNoToken)
	assert.False(t, d.Allowed())
	assert.Equal(t, 0, g.count())
}

func TestDPoPAndBearerCacheSeparately(t *testing.T) {
	t.Parallel()
	g, c, _ := dpopGateway(t)
	_, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	// The same string as a Bearer token is another credential.
	_, err = c.Check(pep.WithToken(t.Context(), dpopToken), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	assert.Equal(t, 2, g.count())
	assert.Equal(t, 1, c.Stats().CacheEntries, "the Bearer refusal left the DPoP entry alone")
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	assert.True(t, d.Cached)
}
