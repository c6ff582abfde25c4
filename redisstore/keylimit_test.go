package redisstore

// One authenticated caller's DPoP proofs of one key must not fill the
// replicas' shared store (a-rep13 F2): the store charges each record to
// its key (dpop.ChargedReplayStore) and keeps at most the Verifier's
// dpop.WithReplayKeyLimit of them, as the in-memory cache does, so that a
// Redis with a memory bound keeps room for everyone else.

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestOneKeyCannotFillTheReplayStore: two replicas' Verifiers on one
// Redis of 2 MB (maxmemory-policy noeviction, as the store requires),
// each with a per-key limit of 1,000. One key's flood of 5,000 proofs
// never fills Redis (no store outage): the key holds at most its limit of
// records, its oldest dropped to make room; a proof is refused
// (dpop.ErrReplayCacheFull) only once its key dropped a record of its own
// second, never below the limit; a dropped proof's replay is refused; the
// key's proof of the next second passes (a-fix13d: a count that refused
// a busy key for its whole window locked out every caller of a service
// signing with it); and another key's first proof, at either replica, is
// accepted.
func TestOneKeyCannotFillTheReplayStore(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	require.True(t, srv.Real(), "a memory bound needs redis-server, on PATH here and in CI")
	c := srv.Client()
	s := NewReplayStore(c, "")
	settled(t, c, s.prefix)
	const limit = 1000
	a, err := dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithReplayKeyLimit(limit))
	require.NoError(t, err)
	b, err := dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithReplayKeyLimit(limit))
	require.NoError(t, err)
	verify := func(v *dpop.Verifier, p string) error {
		_, err := v.Verify(t.Context(), dpop.Request{Proofs: []string{p}, Method: "GET", URL: testURL})
		return err
	}
	mallory, err := dpop.GenerateKey()
	require.NoError(t, err)
	accepted, refused, firstProof := 0, 0, ""
	for range 5 * limit {
		p, err := mallory.Proof("GET", testURL, "", "")
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
	keys, err := c.Keys(t.Context(), s.prefix+"*").Result()
	require.NoError(t, err)
	owner := 0
	for _, k := range keys {
		if strings.HasPrefix(k, s.prefix+"n{") {
			owner++
		}
	}
	require.LessOrEqual(t, owner, 2, "the key's set and mark (%d keys in Redis)", len(keys))
	require.LessOrEqual(t, len(keys), limit+owner+1, "the key's records, its set and mark, and the marker")
	require.ErrorIs(t, verify(b, firstProof), dpop.ErrReplayCacheFull, "the replay of a dropped proof")
	next := mallory.WithClock(func() time.Time { return time.Now().Add(time.Second) })
	p, err := next.Proof("GET", testURL, "", "")
	require.NoError(t, err)
	require.NoError(t, verify(b, p), "the flooding key's proof of the next second")
	alice, err := dpop.GenerateKey()
	require.NoError(t, err)
	for _, v := range []*dpop.Verifier{b, a} {
		p, err := alice.Proof("GET", testURL, "", "")
		require.NoError(t, err)
		require.NoError(t, verify(v, p), "another key's proof, after one key sent its limit and more")
	}
}
