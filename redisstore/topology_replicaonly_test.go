package redisstore_test

// TestInvalidatorRefusesReplicaOnlySentinelClient (issue 24, found by
// the second attack): redis.NewFailoverClient with ReplicaOnly returns a
// *redis.Client whose connections go to the replicas, and a PUBLISH on a
// replica is delivered only to that replica's own subscribers (standalone
// Redis propagates PUBLISH from the primary to its replicas, never from a
// replica). A replica's own heartbeats would come back while another
// replica's purges never reach it. Promise: every session asks the
// server (ROLE) and is lost, with an error that says what to use, so the
// cache is never trusted and no purged GRANT is served past 2 s.

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

func TestInvalidatorRefusesReplicaOnlySentinelClient(t *testing.T) {
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
	deadline := time.Now().Add(60 * time.Second) // Sentinel learns its replicas from INFO every 10 s
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
	client := func() *redis.Client {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster",
			SentinelAddrs: []string{"127.0.0.1:" + strconv.Itoa(ps)}, ReplicaOnly: true})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	const channel = "topology:replicaonly"
	refusedSession(t, client(), channel, "not a primary", "ReplicaOnly")

	gw := startGateway(t)
	a := replica(t, gw, client(), channel)
	b := replica(t, gw, client(), channel)
	tok := revocable(gw, "bob")
	for _, c := range []*pep.Client{a, b} {
		served(t, c, tok)
		_, asked := served(t, c, tok)
		require.True(t, asked, "a replica on a ReplicaOnly client served its cache")
	}
	revoke(t, gw, tok)
	require.NoError(t, a.Purge(ctx, tok), "Purge publishes on a replica, which Redis accepts")
	purged := time.Now()
	var late time.Duration
	for time.Since(purged) < 3*time.Second {
		before := b.Stats().GatewayRequests
		d, err := b.Check(pep.WithToken(context.Background(), tok), "orders", "read")
		if err == nil && d.Allowed() && d.Cached && b.Stats().GatewayRequests == before {
			late = time.Since(purged)
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.LessOrEqual(t, late, invalidation.DefaultTrust, "B served the purged token's cached GRANT %v after Purge returned", late)
	require.True(t, b.Stats().CacheBypassed, "B trusts its cache on a ReplicaOnly client")
}
