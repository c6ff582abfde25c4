package pep_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestARefusalNamedAnywhereInTheBodyRetiresTheToken: a gateway refusing a
// revoked DPoP token with a 403 or a 400 whose JSON body names
// invalid_token anywhere (an error object, a list, a list of errors) is
// read as refusing it, as the same bytes cut short by a syntax error are:
// the call matches ErrUnauthorized and the token's cached GRANT is gone
// (a-dpop16 F1: a body read whole was searched only in a top-level
// "error" string, so the well-formed refusal was a plain failure and the
// revoked token's GRANT stayed served).
func TestARefusalNamedAnywhereInTheBodyRetiresTheToken(t *testing.T) {
	t.Parallel()
	for _, a := range []struct {
		name   string
		status int
		body   string
	}{
		{"403 body with a syntax error", http.StatusForbidden, `{"error":{"code":"invalid_token","message":"the token was revoked"}`},
		{"403 error object", http.StatusForbidden, `{"error":{"code":"invalid_token","message":"the token was revoked"}}`},
		{"403 error array", http.StatusForbidden, `{"error":["invalid_token"]}`},
		{"403 errors list", http.StatusForbidden, `{"error":"Forbidden","errors":[{"error":"invalid_token"}]}`},
		{"400 body with a syntax error", http.StatusBadRequest, `{"error":{"code":"invalid_token"}`},
		{"400 error object", http.StatusBadRequest, `{"error":{"code":"invalid_token"}}`},
	} {
		t.Run(a.name, func(t *testing.T) {
			g := startReference(t)
			c, _, _ := g.dpopClient(t, "alice", nil, pep.WithRetry(1, time.Millisecond, time.Millisecond))
			d := checked(t, c, "orders", "read")
			requireGatewayDecision(t, d, pep.Grant)
			d = checked(t, c, "orders", "read")
			require.True(t, d.Cached, "the GRANT is cached")

			// The token is revoked; the gateway says so on the next call.
			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(a.status)
				_, _ = w.Write([]byte(a.body))
				return true
			})
			_, err := c.Check(t.Context(), "orders", "write")
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the body names invalid_token: the token is refused; got %v", err)

			d, _ = c.Check(t.Context(), "orders", "read")
			assert.False(t, d.Allowed(), "the refused token's cached GRANT must be gone; got cached=%v allowed=%v", d.Cached, d.Allowed())
		})
	}
}

// TestARefusalNamedAnywhereBeatsANonceRequest: a 401 that asks a nonce (a
// DPoP challenge with use_dpop_nonce and a DPoP-Nonce) and names
// invalid_token in its body, wherever, refuses the token and is not
// resent (a-dpop16 F1: in an error object it was resent away and ended as
// ErrProofRejected, the cached GRANT kept).
func TestARefusalNamedAnywhereBeatsANonceRequest(t *testing.T) {
	t.Parallel()
	for _, a := range []struct{ name, body string }{
		{"top-level string", `{"error":"invalid_token"}`},
		{"body with a syntax error", `{"error":{"code":"invalid_token"}`},
		{"error object", `{"error":{"code":"invalid_token"}}`},
	} {
		t.Run(a.name, func(t *testing.T) {
			g := startReference(t)
			c, _, _ := g.dpopClient(t, "alice", nil, pep.WithRetry(1, time.Millisecond, time.Millisecond))
			d := checked(t, c, "orders", "read")
			requireGatewayDecision(t, d, pep.Grant)
			d = checked(t, c, "orders", "read")
			require.True(t, d.Cached, "the GRANT is cached")

			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
				w.Header().Set("DPoP-Nonce", "n1")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(a.body))
				return true
			})
			_, err := c.Check(t.Context(), "orders", "write")
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the body names invalid_token: the token is refused; got %v", err)
			d, _ = c.Check(t.Context(), "orders", "read")
			assert.False(t, d.Allowed(), "the refused token's cached GRANT must be gone; got cached=%v allowed=%v", d.Cached, d.Allowed())
		})
	}
}
