package dpop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAProofIssuedBeforeTheVerifierIsRefused (a-dpop11 F1): a Verifier's
// in-memory replay cache begins empty, so a process restarted accepted a
// captured request's proof again for the rest of its window. A Verifier
// without a store, on the real clock, refuses every proof issued before
// the second it was made in, as too old; fresh proofs pass. With a
// ReplayStore the store's keyspace rule decides, and with a clock of the
// caller's (WithClock) there is no restart to guard.
func TestAProofIssuedBeforeTheVerifierIsRefused(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	const url, token = "https://api.example/orders/42", "bound-access-token"
	request := func(proof string) Request {
		return Request{Proofs: []string{proof}, Method: "DELETE", URL: url, AccessToken: token, JKT: key.Thumbprint()}
	}
	// Captured two seconds before the process (re)started.
	captured, err := key.WithClock(func() time.Time { return time.Now().Add(-2 * time.Second) }).Proof("DELETE", url, token, "")
	require.NoError(t, err)

	restarted := mustVerifier(t)
	_, err = restarted.Verify(t.Context(), request(captured))
	require.ErrorIs(t, err, ErrIATTooOld, "a proof issued before the Verifier was made")
	require.NotContains(t, err.Error(), token)
	fresh := proofOf(t, key, "DELETE", url, token, "")
	_, err = restarted.Verify(t.Context(), request(fresh))
	require.NoError(t, err, "a proof signed after the restart")

	withStore := mustVerifier(t, WithReplayStore(newMemStore(time.Now)))
	_, err = withStore.Verify(t.Context(), request(captured))
	require.NoError(t, err, "a store that vouches for the window decides, not the Verifier's age")

	ownClock := mustVerifier(t, WithClock(time.Now))
	_, err = ownClock.Verify(t.Context(), request(captured))
	require.NoError(t, err, "on the caller's clock")
}
