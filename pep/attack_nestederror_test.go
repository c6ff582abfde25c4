package pep_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackNestedErrorRefusalIsDropped: the gateway refuses a revoked
// DPoP token with a 403 (or a 400) whose JSON body names invalid_token in
// an error object, {"error":{"code":"invalid_token",...}}, a common error
// shape. readAnswer searches a body it cannot read whole for
// "invalid_token" anywhere (raw or JSON-unescaped), but a body it reads
// whole only in a top-level string member "error": the very same refusal
// counts when the body has a syntax error and is dropped when it is
// well formed. So the refusal is read as a plain 403 (the 400 as a
// nonce request, resent): nothing is purged, the call does not match
// ErrUnauthorized, and the refused token's cached GRANT of orders/read
// keeps being served.
//
// The control rows (the same words in a body cut short by a syntax error)
// pass today.
func TestAttackNestedErrorRefusalIsDropped(t *testing.T) {
	t.Parallel()
	for _, a := range []struct {
		name   string
		status int
		body   string
	}{
		{"403 control, body with a syntax error", http.StatusForbidden, `{"error":{"code":"invalid_token","message":"the token was revoked"}`},
		{"403 error object", http.StatusForbidden, `{"error":{"code":"invalid_token","message":"the token was revoked"}}`},
		{"403 error array", http.StatusForbidden, `{"error":["invalid_token"]}`},
		{"403 errors list", http.StatusForbidden, `{"error":"Forbidden","errors":[{"error":"invalid_token"}]}`},
		{"400 control, body with a syntax error", http.StatusBadRequest, `{"error":{"code":"invalid_token"}`},
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

// TestAttackNestedErrorRefusalResentAway: the same class on a 401 to a
// DPoP request that also asks a nonce (a DPoP challenge with
// use_dpop_nonce and a DPoP-Nonce): an invalid_token in the body wins over
// the nonce request (readAnswer's order), but only when the body is read
// as a top-level string or not read whole. In an error object it is
// dropped: the 401 is resent, answered alike, and ends as
// ErrProofRejected; the token is not retired and its cached GRANT stays.
func TestAttackNestedErrorRefusalResentAway(t *testing.T) {
	t.Parallel()
	for _, a := range []struct{ name, body string }{
		{"control, top-level string", `{"error":"invalid_token"}`},
		{"control, body with a syntax error", `{"error":{"code":"invalid_token"}`},
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
