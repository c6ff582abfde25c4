// Package replaytest holds the scenario both shared replay stores (the
// reference server's -redis store and redisstore's) are held to: one
// key's flood of DPoP proofs. It is imported by tests only.
package replaytest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
)

// FloodOneKey sends five times limit proofs of one key to a, a Verifier
// on the store with that per-key limit, and holds the store to the
// in-memory rule: no proof refused for anything but the key's bound
// (dpop.ErrReplayCacheFull: no store outage, so a Redis with a memory
// bound was not filled), none before the key sent its limit. records then
// counts the store's keys, which must be at most limit and extra (the
// key's own set and mark, the keyspace marker). After the flood, at b,
// another replica's Verifier on the same store: the dropped first proof's
// replay is refused; the flooding key's proof of the next second passes
// (a-fix13d: a busy key was refused for a whole window); another key's
// proof passes, at b and at a.
func FloodOneKey(t *testing.T, a, b *dpop.Verifier, url string, limit int, records func() int, extra int) {
	t.Helper()
	verify := func(v *dpop.Verifier, p string) error {
		_, err := v.Verify(t.Context(), dpop.Request{Proofs: []string{p}, Method: "GET", URL: url})
		return err
	}
	mallory, err := dpop.GenerateKey()
	require.NoError(t, err)
	accepted, refused, firstProof := 0, 0, ""
	for range 5 * limit {
		p, err := mallory.Proof("GET", url, "", "")
		require.NoError(t, err)
		if err := verify(a, p); err != nil {
			require.ErrorIs(t, err, dpop.ErrReplayCacheFull, "after %d accepted", accepted)
			require.False(t, errors.Is(err, dpop.ErrReplayStoreUnavailable), "one key's flood is no store outage: %v", err)
			if refused == 0 {
				require.GreaterOrEqual(t, accepted, limit, "a key refused below its limit")
			}
			refused++
			continue
		}
		if firstProof == "" {
			firstProof = p
		}
		accepted++
	}
	require.LessOrEqual(t, records(), limit+extra, "the key's records, its set and mark, the marker")
	require.ErrorIs(t, verify(b, firstProof), dpop.ErrReplayCacheFull, "the replay of a dropped proof")
	next := mallory.WithClock(func() time.Time { return time.Now().Add(time.Second) })
	p, err := next.Proof("GET", url, "", "")
	require.NoError(t, err)
	require.NoError(t, verify(b, p), "the flooding key's proof of the next second")
	alice, err := dpop.GenerateKey()
	require.NoError(t, err)
	for _, v := range []*dpop.Verifier{b, a} {
		p, err := alice.Proof("GET", url, "", "")
		require.NoError(t, err)
		require.NoError(t, verify(v, p), "another key's proof, after one key sent its limit and more")
	}
}
