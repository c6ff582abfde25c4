package authzen_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/pep"
)

// proofNonce returns the nonce claim of a request's DPoP proof, "" if none.
func proofNonce(r *http.Request) string {
	var claims struct {
		Nonce string `json:"nonce"`
	}
	parts := strings.Split(r.Header.Get("DPoP"), ".")
	if len(parts) == 3 {
		if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			_ = json.Unmarshal(b, &claims)
		}
	}
	return claims.Nonce
}

// TestDPoPNonceRotatedByTheResendsAnswer: a PDP that rotates its nonce on
// every answer challenges with n1, answers the resend with a 503 carrying
// n2, and from then on accepts n2 only (the reference server rotates its
// nonce once a minute, so this is a stand-in). The retry must carry n2.
func TestDPoPNonceRotatedByTheResendsAnswer(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		sent    []string
		rotated atomic.Bool
	)
	c, _ := standIn(t, func(w http.ResponseWriter, r *http.Request) {
		nonce := proofNonce(r)
		mu.Lock()
		sent = append(sent, nonce)
		mu.Unlock()
		switch {
		case nonce == "n2":
			answer(http.StatusOK, `{"decision":true}`)(w, r)
		case nonce == "n1" && !rotated.Swap(true):
			w.Header().Set("DPoP-Nonce", "n2")
			answer(http.StatusServiceUnavailable, `{"error":"busy"}`)(w, r)
		default:
			next := "n1"
			if rotated.Load() {
				next = "n2"
			}
			w.Header().Set("DPoP-Nonce", next)
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
			answer(http.StatusUnauthorized, `{"error":"use_dpop_nonce"}`)(w, r)
		}
	}, authzen.WithRetry(2, 1, 2))
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	c.SetDPoPToken(pepToken, signer)

	d, err := c.Evaluate(t.Context(), req)
	require.NoError(t, err, "a valid credential is not refused")
	require.NoError(t, d.Cause)
	assert.True(t, d.Allowed())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"", "n1", "n2"}, sent, "challenge, resend, retry with the resend's nonce")
}

// TestTokenChangeStopsTheCall: when the client's credential is replaced or
// cleared while a call is under way, the call fails closed at its next
// step (a retry, or the answer on its way): a denial with ErrTokenChanged
// and a nil error, not counted by the breaker, nothing cached.
func TestTokenChangeStopsTheCall(t *testing.T) {
	t.Parallel()
	changes := []struct {
		name   string
		change func(c *authzen.Client)
	}{
		{"SetToken", func(c *authzen.Client) { c.SetToken("another-" + pepToken) }},
		{"ClearToken", func(c *authzen.Client) { c.ClearToken() }},
	}
	moments := []struct {
		name   string
		status int // the answer to the request during which the token changes
	}{
		{"before the retry", http.StatusServiceUnavailable},
		{"while the answer is on its way", http.StatusOK},
	}
	for _, ch := range changes {
		for _, m := range moments {
			t.Run(ch.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				var (
					c     *authzen.Client
					armed atomic.Bool
				)
				c, n := standIn(t, func(w http.ResponseWriter, r *http.Request) {
					if armed.CompareAndSwap(true, false) {
						ch.change(c)
						answer(m.status, `{"decision":true}`)(w, r)
						return
					}
					answer(http.StatusOK, `{"decision":true}`)(w, r)
				}, authzen.WithRetry(2, time.Millisecond, 2*time.Millisecond), authzen.WithBreaker(1, time.Hour))
				armed.Store(true)

				d, err := c.Evaluate(t.Context(), req)
				require.NoError(t, err, "a fail-closed denial, not an error")
				assert.False(t, d.Allowed())
				require.ErrorIs(t, d.Cause, authzen.ErrTokenChanged)
				assert.NotErrorIs(t, d.Cause, authzen.ErrUnavailable)
				assert.EqualValues(t, 1, n.Load(), "nothing is sent after the change")
				assert.Equal(t, authzen.BreakerState(pep.BreakerClosed), c.Stats().Breaker)
				assert.Zero(t, c.Stats().CacheEntries)

				c.SetToken(pepToken) // the old credential again: nothing cached for it
				d, err = c.Evaluate(t.Context(), req)
				require.NoError(t, err)
				assert.True(t, d.Allowed())
				assert.False(t, d.Cached)
			})
		}
	}
}
