package pep_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAnUnclearNonceRequestRetiresNoToken: a gateway asks a nonce in the
// plainest way (401, DPoP error="use_dpop_nonce", a DPoP-Nonce) with a
// body holding a raw tab or newline in its message (hand-built JSON that
// encoding/json refuses), and the one resend meets a 503. The body came
// whole and names invalid_token nowhere, so nothing refuses the token: the
// call fails unavailable and the token stays, as with a clean body
// (a-dpop16 F2: the unclear 401 counted as a refusal the 503 could not
// clear, and the valid token was retired on every replica).
func TestAnUnclearNonceRequestRetiresNoToken(t *testing.T) {
	t.Parallel()
	for _, a := range []struct{ name, body string }{
		{"clean body", `{"error":"use_dpop_nonce","message":"nonce required"}`},
		{"raw tab in the message", "{\"error\":\"use_dpop_nonce\",\"message\":\"nonce\trequired\"}"},
		{"raw newline in the message", "{\"error\":\"use_dpop_nonce\",\"message\":\"nonce\nrequired\"}"},
	} {
		t.Run(a.name, func(t *testing.T) {
			g := startReference(t)
			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				if testkit.ProofNonce(r.Header.Get("DPoP")) == "n1" {
					writeError(w, http.StatusServiceUnavailable, "blip")
					return true
				}
				w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
				w.Header().Set("DPoP-Nonce", "n1")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(a.body))
				return true
			})
			c, rec, _ := g.dpopClient(t, "alice", nil, pep.WithRetry(1, time.Millisecond, time.Millisecond))
			_, err := c.Check(t.Context(), "orders", "read")
			assert.NotErrorIs(t, err, pep.ErrUnauthorized, "nothing in the answers refuses the token; got %v", err)
			assert.NotContains(t, rec.kinds(), events.TokenExpired, "a nonce request and a 503 must not retire a valid token")
		})
	}
}
