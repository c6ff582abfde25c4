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

// TestOneKeyIsChargedOnACluster: on a Redis Cluster (one node holding
// every slot: the record and its key's counters lie in different slots
// all the same, which one script may not touch) the store charges each
// proof to its key too: one key's proofs are accepted up to the
// Verifier's limit and then refused with dpop.ErrReplayCacheFull, no store
// outage; a replay is a replay; another key's proof is accepted.
func TestOneKeyIsChargedOnACluster(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	require.True(t, srv.Real(), "a Cluster needs redis-server, on PATH here and in CI")
	ctx := t.Context()
	node := srv.Client()
	require.NoError(t, node.Do(ctx, "cluster", "addslotsrange", 0, 16383).Err())
	require.Eventually(t, func() bool {
		info, _ := node.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok")
	}, 30*time.Second, 10*time.Millisecond, "the cluster is ok")
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	t.Cleanup(func() { _ = c.Close() })
	s := NewReplayStore(c, "")
	settled(t, c, s.prefix)
	const limit = 20
	v, err := dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithReplayKeyLimit(limit))
	require.NoError(t, err)
	verify := func(p string) error {
		_, err := v.Verify(ctx, dpop.Request{Proofs: []string{p}, Method: "GET", URL: testURL})
		return err
	}
	mallory, err := dpop.GenerateKey()
	require.NoError(t, err)
	var proofs []string
	for range limit + 1 {
		p, err := mallory.Proof("GET", testURL, "", "")
		require.NoError(t, err)
		proofs = append(proofs, p)
	}
	for _, p := range proofs[:limit] {
		require.NoError(t, verify(p))
	}
	err = verify(proofs[limit])
	require.ErrorIs(t, err, dpop.ErrReplayCacheFull)
	require.NotErrorIs(t, err, dpop.ErrReplayStoreUnavailable)
	alice, err := dpop.GenerateKey()
	require.NoError(t, err)
	p, err := alice.Proof("GET", testURL, "", "")
	require.NoError(t, err)
	require.NoError(t, verify(p), "another key's proof")
	require.ErrorIs(t, verify(p), dpop.ErrReplay)
}
