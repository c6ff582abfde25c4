package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestAttackClusterReplayOfOldest: on a Redis Cluster the charge
// (ChargeCountScript) runs before the record's SET NX and never asks
// whether the record is there. The replay of a key's oldest held proof,
// when the key holds its limit, makes the charge pop that very record
// from the key's set and hand its name back as "dropped"; dropRecords
// then deletes the replayed proof's own record and Remember's SET NX
// writes it again: the replay is accepted (a second replica's Verifier,
// sharing the Cluster, GRANTs it). On a single server ChargeScript checks
// EXISTS first and the replay is refused.
func TestAttackClusterReplayOfOldest(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	require.True(t, srv.Real(), "a Cluster needs redis-server")
	ctx := t.Context()
	node := srv.Client()
	require.NoError(t, node.Do(ctx, "cluster", "addslotsrange", 0, 16383).Err())
	require.Eventually(t, func() bool {
		info, _ := node.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok")
	}, 30*time.Second, 10*time.Millisecond, "the cluster is ok")
	newVerifier := func() *dpop.Verifier {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
		t.Cleanup(func() { _ = c.Close() })
		s := NewReplayStore(c, "")
		settled(t, c, s.prefix)
		v, err := dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithReplayKeyLimit(2))
		require.NoError(t, err)
		return v
	}
	replica1, replica2 := newVerifier(), newVerifier()
	verify := func(v *dpop.Verifier, p string) error {
		_, err := v.Verify(ctx, dpop.Request{Proofs: []string{p}, Method: "GET", URL: testURL})
		return err
	}
	key, err := dpop.GenerateKey()
	require.NoError(t, err)
	now := time.Now()
	older := key.WithClock(func() time.Time { return now.Add(-time.Second) })
	newer := key.WithClock(func() time.Time { return now })
	a, err := older.Proof("GET", testURL, "", "")
	require.NoError(t, err)
	b, err := newer.Proof("GET", testURL, "", "")
	require.NoError(t, err)
	require.NoError(t, verify(replica1, a), "the key's first proof")
	require.NoError(t, verify(replica1, b), "the key's second proof (the key holds its limit)")

	// An attacker who captured proof a replays it at another replica.
	err = verify(replica2, a)
	require.Error(t, err, "the replay of a held proof must be refused; it was ACCEPTED")
}
