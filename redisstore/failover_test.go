package redisstore

import (
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestReplayStoreWithReplicasSurvivesFailoverToALaggingReplica: Redis
// replicates asynchronously, so a replica promoted after a failover may
// miss the newest records while holding the keyspace's marker (written
// long ago). With WithReplicas, a proof counts as first only once a
// replica holds its record: no proof is accepted twice across the
// failover, whether the link to the replica was up (the proof accepted,
// its replay refused by the promoted replica) or stalled (the proof
// refused, as the store cannot vouch for it).
//
// Setup: primary A, replica B replicating through a proxy (the network
// between them); the service replicas reach "the primary" through a
// dialer that the failover switches from A to B (what Sentinel or a DNS
// name does).
func TestReplayStoreWithReplicasSurvivesFailoverToALaggingReplica(t *testing.T) {
	t.Parallel()
	a, b := redistest.Start(t), redistest.Start(t)
	if !a.Real() {
		t.Skip("miniredis has no replication: CI (.ci/run) runs the real server")
	}
	link := redistest.StartProxy(t, redistest.Listen(t), a.Addr(), nil)
	host, port, _ := net.SplitHostPort(link.Addr)
	ctx := t.Context()
	require.NoError(t, b.Client().Do(ctx, "REPLICAOF", host, port).Err())

	var primary redistest.Name
	primary.Point(a.Addr())
	store := func() *ReplayStore {
		return NewReplayStore(primary.Client(t, redis.Options{ContextTimeoutEnabled: true, MaxRetries: -1}), "", WithReplicas(1, shortWait))
	}
	s1, s2 := store(), store()
	settled(t, a.Client(), s1.prefix) // the keyspace has been in use for an hour

	// B has caught up with A (marker included).
	require.Eventually(t, func() bool {
		info, err := b.Client().Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
		n, err := b.Client().Exists(ctx, s1.since).Result()
		return err == nil && n == 1
	}, 15*time.Second, 20*time.Millisecond)

	v1, v2 := replica(t, s1, time.Now), replica(t, s2, time.Now)
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	accepted := map[string]int{}
	verify := func(v *dpop.Verifier, req dpop.Request) error {
		_, err := v.Verify(ctx, req)
		if err == nil {
			accepted[req.Proofs[0]]++
		}
		return err
	}

	// The link is up: a proof is accepted once B holds its record.
	up := proofAt(t, signer, time.Now())
	require.NoError(t, verify(v1, up), "accepted once the replica acknowledged it")
	require.ErrorIs(t, verify(v2, up), dpop.ErrReplay)

	// The link A->B stalls: A records the proof, B does not; refused.
	link.Set(redistest.Drop)
	link.Cut()
	stalled := proofAt(t, signer, time.Now())
	require.ErrorIs(t, verify(v1, stalled), dpop.ErrReplayStoreUnavailable, "no replica acknowledged it")

	// A dies; B is promoted, and C made its replica (as Sentinel
	// reconfigures the others); the service follows.
	a.Stop()
	require.NoError(t, b.Client().Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	c := redistest.Start(t)
	bHost, bPort, _ := net.SplitHostPort(b.Addr())
	require.NoError(t, c.Client().Do(ctx, "REPLICAOF", bHost, bPort).Err())
	require.Eventually(t, func() bool {
		info, err := c.Client().Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 15*time.Second, 20*time.Millisecond)
	primary.Point(b.Addr())

	require.ErrorIs(t, verify(v2, up), dpop.ErrReplay, "the proof accepted before the failover is a replay after it")
	for _, v := range []*dpop.Verifier{v1, v2, v1} {
		for _, req := range []dpop.Request{up, stalled} {
			err := verify(v, req)
			require.True(t, err == nil || errors.Is(err, dpop.ErrReplay) || errors.Is(err, dpop.ErrReplayStoreUnavailable), "%v", err)
		}
	}
	for p, n := range accepted {
		require.Equal(t, 1, n, "a proof accepted %d times across the failover (%s...)", n, p[:16])
	}
}

// TestNewReplayStoreRefusesMisusedOptions: a nil client, and
// WithReplicas's and WithIATWindow's mistakes, are refused at construction
// with what to fix.
func TestNewReplayStoreRefusesMisusedOptions(t *testing.T) {
	t.Parallel()
	single := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": "127.0.0.1:1"}})
	t.Cleanup(func() { _ = single.Close(); _ = cluster.Close(); _ = ring.Close() })
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		opt    ReplayOption
		want   string
	}{
		{"TestNewReplayStoreNilClient", nil, nil, "redisstore: NewReplayStore: nil client"},
		{"no replicas", single, WithReplicas(0, time.Second), "give n >= 1 replicas and a timeout > 0"},
		{"no timeout", single, WithReplicas(1, 0), "give n >= 1 replicas and a timeout > 0"},
		{"a timeout the Verifier cuts", single, WithReplicas(1, dpop.ReplayStoreTimeout), "at most redisstore.MaxReplicaWait"},
		{"a timeout that leaves no room for the call's other round trips", single, WithReplicas(1, MaxReplicaWait+time.Millisecond), "at most redisstore.MaxReplicaWait (1s)"},
		{"a Cluster", cluster, WithReplicas(1, time.Second), "WithReplicas needs a *redis.Client"},
		// a-fix10b F1: a Ring's records lie on servers the marker's checks
		// (restarts, evictions) never see.
		{"a Ring", ring, nil, "a *redis.Ring may spread records over servers"},
		{"a wrapped Ring (a-last10)", struct{ *redis.Ring }{ring}, nil, "may spread records over servers"},
		{"no iat max age", single, WithIATWindow(0, time.Second), "WithIATWindow(0s, 1s): give maxAge from 1s to 1h0m0s and maxSkew from 0 to 1h0m0s"},
		{"a negative skew", single, WithIATWindow(time.Minute, -time.Second), "WithIATWindow(1m0s, -1s): give maxAge from 1s"},
		// The store's lifetime (maxAge + maxSkew + margins) overflowed to a
		// negative duration, and a keyspace that began after a proof's
		// first record no longer made its replay refused.
		{"a max age of no bound", single, WithIATWindow(math.MaxInt64, 0), "WithIATWindow(2562047h47m16.854775807s, 0s): give maxAge from 1s"},
		{"a skew past the Verifiers' bound", single, WithIATWindow(time.Minute, time.Hour+time.Second), "WithIATWindow(1m0s, 1h0m1s): give maxAge from 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r)
				require.Contains(t, r, tc.want)
			}()
			NewReplayStore(tc.client, "", tc.opt)
		})
	}
}
