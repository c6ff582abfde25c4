package redisstore

import (
	"context"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestAttackReplayAfterFailoverToLaggingReplica: the ReplayStore's doc
// says a Redis "failed over to a replica that missed the last writes"
// is one of the losses its "since" marker guards against. It does not:
// the marker was written long ago and replicated, so the promoted replica
// has it; only the proof records of the last moments are missing, and a
// proof the old primary accepted is accepted again by the new one.
//
// Setup: primary A, replica B replicating through a proxy (the network
// between them); the replicas' clients reach "the primary" through a
// dialer that a failover switches from A to B (what Sentinel or a DNS
// name does). The link A->B stalls (a partition, or just replication
// lag), a proof is accepted on A, A is lost, B is promoted: the replay is
// accepted.
func TestAttackReplayAfterFailoverToLaggingReplica(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	if !a.Real() {
		t.Skip("needs a real redis-server for replication")
	}
	link := startFaultProxy(t, a.Addr())
	host, port, _ := net.SplitHostPort(link.addr)
	ctx := t.Context()
	// redistest starts redis-server in the package directory without
	// --dir: a replica writes the RDB of its full sync there as dump.rdb,
	// which every later redistest server would then load (an "empty"
	// Redis that is not: the marker of this test, an hour old). Sync
	// through memory only.
	require.NoError(t, a.Client().ConfigSet(ctx, "repl-diskless-sync", "yes").Err())
	require.NoError(t, a.Client().ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err())
	require.NoError(t, b.Client().ConfigSet(ctx, "repl-diskless-load", "on-empty-db").Err())
	t.Cleanup(func() {
		if _, err := os.Stat("dump.rdb"); err == nil {
			t.Errorf("dump.rdb was left in the package directory")
		}
	})
	require.NoError(t, b.Client().Do(ctx, "REPLICAOF", host, port).Err())

	var primary atomic.Value
	primary.Store(a.Addr())
	client := func() *redis.Client {
		c := redis.NewClient(&redis.Options{ContextTimeoutEnabled: true, MaxRetries: -1,
			Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, primary.Load().(string))
			}})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	s1, s2 := NewReplayStore(client(), ""), NewReplayStore(client(), "")
	settled(t, a.Client(), s1) // the keyspace has been in use for an hour

	// B has caught up with A (marker included).
	require.Eventually(t, func() bool {
		info, err := b.Client().Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
		n, err := b.Client().Exists(ctx, s1.since).Result()
		return err == nil && n == 1
	}, 10*time.Second, 20*time.Millisecond)

	v1 := replica(t, s1, time.Now)
	v2 := replica(t, s2, time.Now)
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	req := proofAt(t, signer, time.Now())

	// The A->B link stalls; A accepts the proof.
	link.set(blackhole)
	_, err = v1.Verify(ctx, req)
	require.NoError(t, err, "accepted once on the primary")
	_, err = v2.Verify(ctx, req)
	require.ErrorIs(t, err, dpop.ErrReplay, "a replay while A is primary is refused")

	// A dies; B is promoted; clients follow.
	a.Stop()
	require.NoError(t, b.Client().Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	primary.Store(b.Addr())

	_, err = v2.Verify(ctx, req)
	require.ErrorIs(t, err, dpop.ErrReplay,
		"BREAK: the proof accepted on the old primary is accepted again after failover (err=%v); the since marker survived the failover", err)
}
