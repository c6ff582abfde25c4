package pep_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// a-fix15 F4: a DPoP request's 400 carrying a new nonce, whose body the
// client cannot read whole (a raw tab: "unclear") and which names no
// invalid_token, is resent once with the nonce; "only a 2xx clears it", so
// any other answer to the resend is dropped and the first 400 stands. When
// the gateway checks the nonce first and the token next, the resend's
// answer is the refusal of the token (401 DPoP error="invalid_token"), and
// the client throws it away for the 400, which refuses nothing: the
// revoked token is not retired and its cached GRANT is served on. A
// refusal of the token is resent away.
func TestAttackResendRefusalDroppedForUnclear400(t *testing.T) {
	t.Parallel()
	for _, then := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(then), func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c, rec, _ := g.dpopClient(t, "alice", nil)
			require.True(t, checked(t, c, "orders", "read").Allowed())
			var n atomic.Int32
			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				w.Header().Set("Content-Type", "application/json")
				if n.Add(1) == 1 { // the nonce check: a sloppy 400 asking a nonce
					w.Header().Set("DPoP-Nonce", "n-1")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = w.Write([]byte("{\"error\":\"Bad Request\",\"message\":\"nonce\trequired\"}"))
					return true
				}
				// with the nonce: the token is revoked
				w.Header().Set("WWW-Authenticate", `DPoP algs="ES256", error="invalid_token", error_description="revoked"`)
				w.WriteHeader(then)
				_, _ = w.Write([]byte(`{"error":"invalid_token","message":"the token was revoked"}`))
				return true
			})
			d, err := c.Check(t.Context(), "orders", "write")
			if err == nil {
				err = d.Cause
			}
			t.Logf("sent %d, the call's error: %v", n.Load(), err)
			require.Equal(t, int32(2), n.Load(), "resent once with the nonce")
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the resend's answer refused the token")
			assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, rec.kinds())
			again, _ := c.Check(t.Context(), "orders", "read")
			assert.False(t, again.Allowed(), "a token the gateway refused is GRANTed from the cache")
		})
	}
}
