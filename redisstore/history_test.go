package redisstore_test

// A session is tied to one primary's replication history (a-fix9c F1). A
// failover done in two steps (s2 promoted with REPLICAOF NO ONE and the
// Redis name pointed at it; then s1 demoted with REPLICAOF s2) leaves both
// answering role:master between the steps, so the primary check passes on
// either. Replica C's Purge landed on s2 and returned nil; replica B,
// subscribed on s1, never got it (a message s2 took before s1 replicates
// it is in no stream s1 ever gets: pub/sub is not in the snapshot of the
// full sync). Once s1 was demoted, B's heartbeats, refused there, were
// retried on s2 through the name, replicated to s1 and came back: B's
// session never broke and B served the revoked token's cached GRANT for
// the cache's TTL. Promise: a heartbeat counts only when a primary of the
// session's replication history (master_replid) took it, and a heartbeat
// or purge taken under another ends the session (Lost, then purge-all).

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// replOffset is s's master_repl_offset (INFO replication).
func replOffset(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	info := testkit.Must(s.Client().Info(t.Context(), "replication").Result())(t)
	m := regexp.MustCompile(`master_repl_offset:(\d+)`).FindStringSubmatch(info)
	require.NotNil(t, m, "INFO replication has no master_repl_offset: %q", info)
	return testkit.Must(strconv.ParseInt(m[1], 10, 64))(t)
}

func TestASessionEndsWhenItsHeartbeatsMoveToAnotherHistory(t *testing.T) {
	t.Parallel()
	s1, s2 := replicated(t)
	ctx := t.Context()
	// The Redis name the replicas dial: a DNS name or proxy an operator
	// switches, connections already made staying where they are.
	var primary redistest.Name
	primary.Point(s1.Addr())
	client := func() *redis.Client { return primary.Client(t, redis.Options{}) }
	gw := startGateway(t)
	const channel = "replid:window"
	b := replica(t, gw, client(), channel)
	waitFor(t, "B trusts its cache", 10*time.Second, trusted(b))

	// Step 1: s2 promoted, the name switched to it. C, dialling after
	// the switch, publishes on s2; B's pooled connections stay on s1.
	require.NoError(t, s2.Client().Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	primary.Point(s2.Addr())
	c := replica(t, gw, client(), channel)
	waitFor(t, "B and C trust their caches", 10*time.Second, trusted(b, c))

	tok := revocable(gw, "bob")
	cache(t, tok, b, c)
	gw.Revoke(t, realm, app, secret, tok)
	require.NoError(t, c.Purge(ctx, tok), "C's purge was taken by a primary")
	purged := time.Now()

	// Step 2 once s1 has taken a heartbeat of B's after C's purge: s1's
	// history has then gone past the point s2 forked from it, so s1,
	// demoted, resyncs in full and never gets the purge (a partial
	// resync would carry s2's backlog, purge included, to s1). The
	// attacker waited a second for this; the state is what matters.
	forked := replOffset(t, s1)
	waitFor(t, "s1 takes one of B's heartbeats after the purge", 10*time.Second, func() bool {
		return replOffset(t, s1) > forked
	})
	host2, port2, _ := net.SplitHostPort(s2.Addr())
	require.NoError(t, s1.Client().Do(ctx, "REPLICAOF", host2, port2).Err())
	demoted := time.Now()

	// Watched from the purge: B's next heartbeat, refused on s1 and
	// retried on s2, is taken under s2's history and ends B's session.
	late := latestCachedGrant(t, b, tok, purged, 5*invalidation.DefaultTrust)
	t.Logf("B served the purged token's GRANT until %v after the purge, %v after the demotion", late, late-demoted.Sub(purged))
	require.LessOrEqual(t, late, invalidation.DefaultTrust,
		"B served the purged token's cached GRANT %v after C's Purge returned nil; B: %+v", late, b.Stats())
	waitFor(t, "s1 replicates s2", 15*time.Second, linkUp(t, s1))
	waitFor(t, "B trusts its cache again, on s2's history", 10*time.Second, trusted(b))
}

// purgesTo is a go-redis hook that sends the Invalidator's publications on
// channel itself (its purges, not its heartbeats) to another server: a
// pool half of whose connections a failover left on each side.
type purgesTo struct {
	channel string
	other   *redis.Client
}

func (purgesTo) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h purgesTo) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) == 7 && a[5] == h.channel {
			return h.other.Process(ctx, cmd)
		}
		return next(ctx, cmd)
	}
}

func (purgesTo) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestAPurgeTakenOnAnotherHistoryEndsTheSession: a replica whose own
// purge a primary of another replication history took (its subscription
// and heartbeats on one primary, the purge on another) stops trusting its
// cache at once, without waiting for a heartbeat to land there too.
func TestAPurgeTakenOnAnotherHistoryEndsTheSession(t *testing.T) {
	t.Parallel()
	s1, s2 := redistest.Start(t), redistest.Start(t)
	gw := startGateway(t)
	const channel = "replid:purge"
	rdb := redis.NewClient(&redis.Options{Addr: s1.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(purgesTo{channel: channel, other: s2.Client()})
	b := replica(t, gw, rdb, channel)
	waitFor(t, "B trusts its cache", 10*time.Second, trusted(b))

	tok := revocable(gw, "bob")
	cache(t, tok, b)
	gaps := b.Stats().InvalidationGaps
	require.NoError(t, b.Purge(t.Context(), tok), "s2, a primary, took B's purge")
	waitFor(t, "B's session ends (reported lost)", 10*time.Second, func() bool { return b.Stats().InvalidationGaps > gaps })
}
