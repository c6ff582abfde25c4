package pep_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestDPoPSlowClientCallPassesAfterNonceRotation (a-dpop14 F1): a
// server that checks proofs with dpop.Verifier (real clock, no store,
// WithNonces) and a client whose clock runs 30 s slow (inside the 60 s
// window, so its proofs are dated before the Verifier began and need
// "server~start"). Once the server's nonce goes stale, the Verifier's
// use_dpop_nonce answer to "old~start" still carries the start nonce, so
// the client's one resend passes. Before the fix it carried the bare new
// nonce, the resend was asked again, and the valid token's call failed.
func TestDPoPSlowClientCallPassesAfterNonceRotation(t *testing.T) {
	t.Parallel()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	slow := signer.WithClock(func() time.Time { return time.Now().Add(-30 * time.Second) })
	rot := &gatewaytest.RotatingNonces{}
	v, err := dpop.NewVerifier(dpop.WithNonces(rot))
	require.NoError(t, err)
	srv := gatewaytest.Start(t, gatewaytest.Verifying(v, signer.Thumbprint(),
		`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`))

	c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()), pep.WithCache(0, 0, 0))
	c.SetDPoPToken("dpop-bound-token", slow)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err, "first call: one nonce resend passes")
	require.True(t, d.Allowed())

	rot.Rotate() // the server's nonce rotates, as every nonce source does
	d, err = c.Check(t.Context(), "orders", "read")
	require.NoError(t, err, "a valid token's call after a nonce rotation fails")
	require.True(t, d.Allowed())
}
