package authzen_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
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
