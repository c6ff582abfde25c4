package redisstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestReplayAttackThroughRedisFaults: replicas reach Redis through a
// proxy that goes down, hangs and resets connections, and Redis restarts
// empty mid-run, while an attacker sends every proof it saw accepted to
// every replica again, in every phase. No proof is ever accepted twice;
// each fault refuses proofs with ErrReplayStoreUnavailable (never
// ErrReplay's opposite: an acceptance); and once the faults are gone the
// same replicas, not rebuilt, accept fresh proofs again.
func TestReplayAttackThroughRedisFaults(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	proxy := redistest.StartProxy(t, redistest.Listen(t), srv.Addr(), nil)
	now := testkit.NewClock(time.Now())
	const replicas = 3
	vs := make([]*dpop.Verifier, replicas)
	var marker *ReplayStore
	for i := range vs {
		c := redis.NewClient(&redis.Options{Addr: proxy.Addr, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 200 * time.Millisecond, PoolSize: 4})
		t.Cleanup(func() { _ = c.Close() })
		s := NewReplayStore(c, "")
		marker = s
		vs[i] = replica(t, s, now.Now)
	}
	settle := func() {
		require.NoError(t, srv.Client().Set(t.Context(), marker.since, now.Now().Add(-time.Hour).UnixMilli(), 0).Err())
	}
	settle()
	signer := testkit.Must(dpop.GenerateKey())(t)

	const clean, faulted = 5 * time.Second, 150 * time.Millisecond
	var seen []dpop.Request // every proof sent so far
	accepted := map[string]int{}
	// round sends k fresh proofs and every proof seen so far to every
	// replica at once, each call bounded by limit, and returns how many
	// calls were accepted and refused as unavailable. Clean rounds have
	// seconds (a loaded machine must not turn them into faults), faulted
	// ones 150 ms.
	round := func(k int, limit time.Duration) (ok, unavailable int) {
		for range k {
			seen = append(seen, proofAt(t, signer, now.Now()))
		}
		type result struct {
			proof string
			err   error
		}
		results := make(chan result, len(seen)*replicas)
		var wg sync.WaitGroup
		for _, req := range seen {
			for _, v := range vs {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(t.Context(), limit)
					defer cancel()
					_, err := v.Verify(ctx, req)
					results <- result{req.Proofs[0], err}
				})
			}
		}
		wg.Wait()
		close(results)
		for r := range results {
			switch {
			case r.err == nil:
				accepted[r.proof]++
				ok++
				require.Equal(t, 1, accepted[r.proof], "a proof was accepted twice")
			case errors.Is(r.err, dpop.ErrReplayStoreUnavailable):
				unavailable++
			default:
				require.True(t, errors.Is(r.err, dpop.ErrReplay) || errors.Is(r.err, dpop.ErrIATTooOld), "%v", r.err)
			}
		}
		return ok, unavailable
	}

	ok, _ := round(4, clean)
	require.Equal(t, 4, ok, "clean: each fresh proof accepted once")

	for _, fault := range []struct {
		name string
		mode int32
	}{{"hung", redistest.Drop}, {"reset", redistest.Reset}} {
		proxy.Set(fault.mode)
		proxy.Cut() // a hung connection must not finish a reply begun before
		ok, unavailable := round(2, faulted)
		require.Zero(t, ok, "%s: nothing accepted", fault.name)
		require.Positive(t, unavailable, "%s: refused as unavailable", fault.name)
		proxy.Set(redistest.Pass)
		// The fresh proofs, and those the fault refused (never recorded).
		ok, _ = round(2, clean)
		require.Equal(t, 4, ok, "after %s: proofs accepted again", fault.name)
	}

	srv.Stop()
	ok, _ = round(2, faulted)
	require.Zero(t, ok, "Redis down: nothing accepted")
	srv.Restart()
	// Seconds per call, so that the calls not made on a connection the
	// restart cut reach Redis and find its keyspace new.
	ok, unavailable := round(2, clean)
	require.Zero(t, ok, "Redis restarted empty: nothing it may have forgotten is accepted")
	require.Positive(t, unavailable)
	n := testkit.Must(srv.Client().Exists(t.Context(), marker.since).Result())(t)
	require.EqualValues(t, 1, n, "the replicas marked when the keyspace began")

	// 71 s after the marker (Redis's clock, which the replicas' agrees
	// with), the same replicas and clients serve fresh proofs; the old
	// ones are refused (round counts them as neither).
	now.Set(time.Now().Add(dpop.DefaultMaxSkew + dpop.ReplayStoreMargin + time.Second))
	ok, _ = round(3, clean)
	require.Equal(t, 3, ok, "recovered without rebuilding a replica")
	ok, _ = round(0, clean)
	require.Zero(t, ok, "and their replays refused")
}
