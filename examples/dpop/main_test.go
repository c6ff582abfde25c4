package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun runs the example against the in-process reference server, seeded
// with the embedded fixture: carol
// (an order clerk in the acme fixture) may write orders with her bound token,
// the same token without its key is refused, and the verifier refuses a
// replayed proof.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, "", ""))
	got := out.String()
	require.Contains(t, got, "token endpoint: token_type DPoP\n")
	require.Contains(t, got, "Check orders:write with DPoP: GRANT\n")
	require.Contains(t, got, "the same token as Bearer: 401, unauthorized: true\n")
	require.Contains(t, got, "verifier: proof accepted\n")
	require.Contains(t, got, `verifier: replayed proof refused: true, challenge: DPoP error="invalid_dpop_proof"`)
}
