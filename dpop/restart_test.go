package dpop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAProofAcceptedBeforeARestartIsRefusedAfterIt (a-dpop11 F1): a
// Verifier's in-memory replay cache begins empty, so a process restarted
// (or a Verifier made anew) accepted a captured request's proof again for
// the rest of its window. A Verifier without a store refuses every proof
// issued before the second it was made in (or WithReplayCacheStart's
// time), as too old; fresh proofs pass.
// A Verifier with a ReplayStore leaves that to the store, whose keyspace
// rule (ErrKeyspaceNew) covers its own restarts.
func TestAProofAcceptedBeforeARestartIsRefusedAfterIt(t *testing.T) {
	t.Parallel()
	clk := newManualClock(testNow)
	key, err := GenerateKey()
	require.NoError(t, err)
	signer := key.WithClock(clk.Now)
	const url, token = "https://api.example/orders/42", "bound-access-token"
	request := func(proof string) Request {
		return Request{Proofs: []string{proof}, Method: "DELETE", URL: url, AccessToken: token, JKT: signer.Thumbprint()}
	}
	captured, err := signer.Proof("DELETE", url, token, "")
	require.NoError(t, err)

	before, err := NewVerifier(WithClock(clk.Now))
	require.NoError(t, err)
	_, err = before.Verify(t.Context(), request(captured))
	require.NoError(t, err, "a proof of the Verifier's first second is accepted")
	_, err = before.Verify(t.Context(), request(captured))
	require.ErrorIs(t, err, ErrReplay)

	clk.Advance(1500 * time.Millisecond) // the process restarts
	after, err := NewVerifier(WithClock(clk.Now))
	require.NoError(t, err)
	_, err = after.Verify(t.Context(), request(captured))
	require.ErrorIs(t, err, ErrIATTooOld, "the captured proof, replayed after the restart")
	require.NotContains(t, err.Error(), token)

	fresh, err := signer.Proof("DELETE", url, token, "")
	require.NoError(t, err)
	_, err = after.Verify(t.Context(), request(fresh))
	require.NoError(t, err, "a proof signed after the restart")

	// A Verifier told when nothing before can be a replay (a realm's made
	// on first use, whose tokens die with the process) takes the proof a
	// client signed a moment before it was made.
	lazy, err := NewVerifier(WithClock(clk.Now), WithReplayCacheStart(testNow))
	require.NoError(t, err)
	_, err = lazy.Verify(t.Context(), request(captured))
	require.NoError(t, err)
	_, err = NewVerifier(WithReplayCacheStart(time.Time{}))
	require.ErrorContains(t, err, "WithReplayCacheStart")

	withStore, err := NewVerifier(WithClock(clk.Now), WithReplayStore(newMemStore(clk.Now)))
	require.NoError(t, err)
	_, err = withStore.Verify(t.Context(), request(captured))
	require.NoError(t, err, "a store that vouches for the window decides, not the Verifier's age")
}
