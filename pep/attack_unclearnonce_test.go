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

// TestAttackUnclearNonceRequestRetiresValidToken: the gateway asks a nonce
// in the plainest way (401, DPoP error="use_dpop_nonce", a DPoP-Nonce) with
// a body holding a raw tab in its message (hand-built JSON; encoding/json
// refuses it, so the body is "unclear"), and the one resend with that nonce
// meets a 503 blip. The body was received whole and holds no
// invalid_token in any form (the raw and JSON-unescaped search, a-fix15 F2,
// finds none), so nothing in the answer refuses the token: the call should
// fail ErrUnavailable and the valid token stay, as it does for the same
// answer with a clean body (the control row). Today the unclear 401 counts
// as a refusal of the token, the resend's 503 cannot clear it, and the
// valid token is retired: ErrUnauthorized, tokenExpired, its cache purged
// on every replica.
func TestAttackUnclearNonceRequestRetiresValidToken(t *testing.T) {
	t.Parallel()
	for _, a := range []struct{ name, body string }{
		{"control, clean body", `{"error":"use_dpop_nonce","message":"nonce required"}`},
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
