package redisstore_test

// Attack (round 2, a-replicas2): redis.NewFailoverClient with ReplicaOnly
// returns a *redis.Client, which
// NewInvalidator accepts as "a Sentinel-managed primary". Its connections
// go to the replicas, and a PUBLISH on a replica is delivered only to that
// replica's own subscribers (standalone Redis propagates PUBLISH from the
// primary to its replicas, never from a replica). A replica's heartbeats
// come back (it publishes them on the replica it subscribed to), so it
// trusts its cache, while another replica's purges, published on another
// Redis replica, never reach it. No attacker needed. Oracle: the README's
// 2 s bound after Purge returned.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/pep"
)

func TestAttackReplicaOnlyFailoverClientLosesPurges(t *testing.T) {
	ctx := t.Context()
	pm, pr1, pr2, ps := freeClusterPort(t), freeClusterPort(t), freeClusterPort(t), freeClusterPort(t)
	common := func(port int) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", t.TempDir(), "--save", "", "--appendonly", "no"}
	}
	startRedisArgs(t, pm, common(pm)...)
	r1 := startRedisArgs(t, pr1, append(common(pr1), "--replicaof", "127.0.0.1", strconv.Itoa(pm))...)
	r2 := startRedisArgs(t, pr2, append(common(pr2), "--replicaof", "127.0.0.1", strconv.Itoa(pm))...)
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(
		"port %d\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 %d 1\nsentinel down-after-milliseconds mymaster 60000\nsentinel failover-timeout mymaster 60000\n",
		ps, pm)), 0o600))
	s := startRedisArgs(t, ps, conf, "--sentinel")
	deadline := time.Now().Add(20 * time.Second)
	for {
		i1, _ := r1.Info(ctx, "replication").Result()
		i2, _ := r2.Info(ctx, "replication").Result()
		rs, _ := s.Do(ctx, "sentinel", "replicas", "mymaster").Slice()
		if strings.Contains(i1, "master_link_status:up") && strings.Contains(i2, "master_link_status:up") && len(rs) == 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "replication / sentinel not ready")
		time.Sleep(100 * time.Millisecond)
	}
	gw := startGateway(t)
	stale := 0
	for attempt := range 6 {
		channel := fmt.Sprintf("attack:replicaonly:%d", attempt)
		client := func() *redis.Client {
			c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster",
				SentinelAddrs: []string{"127.0.0.1:" + strconv.Itoa(ps)}, ReplicaOnly: true})
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		a := replica(t, gw, client(), channel)
		b := replica(t, gw, client(), channel)
		waitFor(t, "both trust their caches", 20*time.Second, trusted(a, b))
		tok := revocable(gw, "bob")
		cache(t, tok, a, b)
		revoke(t, gw, tok)
		require.NoError(t, a.Purge(ctx, tok))
		purged := time.Now()
		var late time.Duration
		for time.Since(purged) < 4*time.Second {
			before := b.Stats().GatewayRequests
			d, err := b.Check(pep.WithToken(context.Background(), tok), "orders", "read")
			if err == nil && d.Allowed() && d.Cached && b.Stats().GatewayRequests == before {
				late = time.Since(purged)
			}
			time.Sleep(20 * time.Millisecond)
		}
		h1, _ := r1.PubSubChannels(ctx, channel+":hb:*").Result()
		h2, _ := r2.PubSubChannels(ctx, channel+":hb:*").Result()
		t.Logf("attempt %d: heartbeat channels on replica 1: %d, on replica 2: %d; B served the purged GRANT until %v after Purge", attempt, len(h1), len(h2), late)
		if late > invalidation.DefaultTrust {
			stale++
		}
	}
	require.Zero(t, stale, "attempts in which B served a purged token's cached GRANT past 2 s")
}
