package redisstore_test

// Attack (round 2, a-replicas2): the marker's rewrite (a marker dated in
// the future, replay.go's second case) is an unconditional SET of the TIME
// read in the pipeline. A rewrite that lands late (its process paused, or
// its bytes held in a partitioned TCP connection and delivered on
// retransmission) overwrites a newer marker, one written after Redis lost
// its keys, with an older time: the proofs accepted before the loss become
// acceptable again. The late SET is modelled by a go-redis hook that holds
// the rewrite until the loss happened.

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// holdMarkerSet holds a SET of the marker until release is closed.
type holdMarkerSet struct {
	key     string
	held    chan struct{}
	release chan struct{}
}

func (h *holdMarkerSet) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holdMarkerSet) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *holdMarkerSet) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) == 3 && a[0] == "set" && a[1] == h.key {
			close(h.held)
			<-h.release
		}
		return next(ctx, cmd)
	}
}

func TestAttackLateMarkerRewriteMovesMarkerEarlier(t *testing.T) {
	rs := redistest.Start(t)
	const prefix = "attack:marker:"
	admin := rs.Client()
	t.Cleanup(func() { _ = admin.Close() })
	ctx := t.Context()
	future := time.Now().Add(time.Hour).UnixMilli()
	require.NoError(t, admin.Set(ctx, prefix+redisstore.SinceKey, future, 0).Err())

	// Y: a replica whose rewrite of the future marker lands late.
	rdbY := rs.Client()
	t.Cleanup(func() { _ = rdbY.Close() })
	hold := &holdMarkerSet{key: prefix + redisstore.SinceKey, held: make(chan struct{}), release: make(chan struct{})}
	rdbY.AddHook(hold)
	y := redisstore.NewReplayStore(rdbY, prefix)
	yDone := make(chan error, 1)
	go func() {
		_, err := y.Remember(context.Background(), "y-proof", time.Now().Add(time.Hour))
		yDone <- err
	}()
	<-hold.held // Y read the future marker and TIME (T0); its SET is in flight

	// X: another replica, on time.
	rdbX := rs.Client()
	t.Cleanup(func() { _ = rdbX.Close() })
	x := redisstore.NewReplayStore(rdbX, prefix)
	_, err := x.Remember(ctx, "x-first", time.Now().Add(time.Hour))
	require.Error(t, err, "the future marker is rewritten: the keyspace begins now (T1)")
	t1, _ := admin.Get(ctx, prefix+redisstore.SinceKey).Int64()
	lifetime := (dpopLifetime()).Milliseconds()

	time.Sleep(3 * time.Second)
	// Proof P, accepted: its until is past T1 + lifetime.
	until := time.UnixMilli(t1 + lifetime + 1500)
	ok, err := x.Remember(ctx, "proof-P", until)
	require.NoError(t, err)
	require.True(t, ok, "P is accepted")

	// Redis loses its keys; the next Remember writes a new marker (T3).
	require.NoError(t, admin.FlushAll(ctx).Err())
	_, err = x.Remember(ctx, "x-after-loss", time.Now().Add(time.Hour))
	require.Error(t, err)
	t3, _ := admin.Get(ctx, prefix+redisstore.SinceKey).Int64()
	ok, err = x.Remember(ctx, "proof-P-check", until)
	require.False(t, ok && err == nil, "control: a proof with P's until is refused under the new marker")

	// Y's late rewrite lands.
	close(hold.release)
	<-yDone
	now, _ := admin.Get(ctx, prefix+redisstore.SinceKey).Int64()
	t.Logf("marker: T1=%d, after the loss T3=%d, after Y's late rewrite %d (moved %d ms earlier)", t1, t3, now, t3-now)

	ok, err = x.Remember(ctx, "proof-P", until)
	require.False(t, ok && err == nil, "P, accepted before the loss, is accepted again: replay")
}

// dpopLifetime is the store's default lifetime (replay.go):
// maxAge + maxSkew + 2 margins.
func dpopLifetime() time.Duration {
	return dpop.DefaultMaxAge + dpop.DefaultMaxSkew + 2*dpop.ReplayStoreMargin
}
