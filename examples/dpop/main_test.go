package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

// TestRun runs the example against the in-process reference server, seeded
// with the embedded fixture: carol
// (an order clerk in the acme fixture) may write orders with her bound token,
// the same token without its key is refused, and the verifier refuses a
// replayed proof.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	// The hang guard: a clean call beside the rest of the suite on a loaded
	// machine can overrun the clients' 2 s default and fail closed.
	require.NoError(t, run(t.Context(), &out, "", "", pep.WithTimeout(hangguard.Timeout)))
	got := out.String()
	require.Contains(t, got, "token endpoint: token_type DPoP\n")
	require.Contains(t, got, "Check orders:write with DPoP: GRANT\n")
	require.Contains(t, got, "the same token as Bearer: 401, unauthorized: true\n")
	require.Contains(t, got, "verifier: proof accepted\n")
	require.Contains(t, got, `verifier: replayed proof refused: true, challenge: DPoP error="invalid_dpop_proof"`)
}
