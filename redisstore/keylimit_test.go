package redisstore

// One authenticated caller's DPoP proofs of one key must not fill the
// replicas' shared store (a-rep13 F2): the store charges each record to
// its key (dpop.ChargedReplayStore) with the Verifier's
// dpop.WithReplayKeyLimit, as the in-memory cache does, so that key alone
// is refused past its limit, and a Redis with a memory bound keeps room
// for everyone else.

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestOneKeyCannotFillTheReplayStore: two replicas' Verifiers on one
// Redis of 2 MB (maxmemory-policy noeviction, as the store requires),
// each with a per-key limit of 1,000. One key's proofs, sent one after
// the other (40,000 would fill the 2 MB), are accepted up to the limit
// exactly and then refused with dpop.ErrReplayCacheFull (no store outage);
// a replay of an accepted one is still a replay; Redis holds no more than
// the limit's records and a few counters of that key; and another key's
// first proof, at the other replica, is accepted.
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
	accepted, firstProof := 0, ""
	for range 40_000 {
		p, err := mallory.Proof("GET", testURL, "", "")
		require.NoError(t, err)
		if err := verify(a, p); err != nil {
			require.ErrorIs(t, err, dpop.ErrReplayCacheFull, "after %d accepted", accepted)
			require.False(t, errors.Is(err, dpop.ErrReplayStoreUnavailable), "one key over its limit is no store outage: %v", err)
			break
		}
		if firstProof == "" {
			firstProof = p
		}
		accepted++
	}
	require.Equal(t, limit, accepted, "one key's proofs accepted before its limit refused it")
	require.ErrorIs(t, verify(b, firstProof), dpop.ErrReplay, "a replay of the key's accepted proof, past its limit")

	keys, err := c.Keys(t.Context(), s.prefix+"*").Result()
	require.NoError(t, err)
	counters := 0
	for _, k := range keys {
		if strings.HasPrefix(k, s.prefix+"n{") {
			counters++
		}
	}
	require.LessOrEqual(t, counters, 2, "one key's counters (%d keys in Redis)", len(keys))
	require.Equal(t, limit+counters+1, len(keys), "the key's records, its counters and the marker")

	alice, err := dpop.GenerateKey()
	require.NoError(t, err)
	for _, v := range []*dpop.Verifier{b, a} {
		p, err := alice.Proof("GET", testURL, "", "")
		require.NoError(t, err)
		require.NoError(t, verify(v, p), "another key's proof, after one key sent its limit and more")
	}
}
