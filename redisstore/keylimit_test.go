package redisstore

// One authenticated caller's DPoP proofs of one key must not fill the
// replicas' shared store (a-rep13 F2): the store charges each record to
// its key (dpop.ChargedReplayStore) and keeps at most the Verifier's
// dpop.WithReplayKeyLimit of them, as the in-memory cache does, so that a
// Redis with a memory bound keeps room for everyone else.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/replaytest"
	"github.com/orgauthz/orgauthz/internal/testkit"
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
	a := testkit.Must(dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithReplayKeyLimit(limit)))(t)
	b := testkit.Must(dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithReplayKeyLimit(limit)))(t)
	replaytest.FloodOneKey(t, a, b, testURL, limit, func() int {
		keys := testkit.Must(c.Keys(t.Context(), s.prefix+"*").Result())(t)
		return len(keys)
	}, 3)
}
