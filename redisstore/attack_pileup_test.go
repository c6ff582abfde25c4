package redisstore_test

// Attack (round 2, a-replicas2): bounded() leaves each command it gave up
// on running on a goroutine until go-redis gives up. With Redis frozen (a
// listener that accepts and never answers), every Publish (and Remember)
// under a short deadline returns at once, but leaves a goroutine behind:
// how many pile up is the call rate times go-redis's give-up time (the
// pool's wait, PoolTimeout, 30 s when ReadTimeout is disabled), with no
// cap of the library's own. This measures it; it reports, and fails when
// more goroutines are left behind than twice the pool's connections
// (measured: one per connection; before this bound was set, the test
// allowed 1000, and made about 400 calls in 2 s).

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

func TestAttackBoundedPilesUpGoroutinesWhileRedisIsFrozen(t *testing.T) {
	addr, release := redistest.Frozen(t)
	// Fixed work: ten times as many calls as the pool has connections.
	const poolSize, calls = 10, 100
	limit := 2 * poolSize
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: -1, WriteTimeout: -1, PoolSize: poolSize})
	inv := redisstore.NewInvalidator(rdb, "attack:pileup")
	base := runtime.NumGoroutine()
	var over time.Duration
	for range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		t0 := time.Now()
		_ = inv.Publish(ctx, []byte("purge"))
		over = max(over, time.Since(t0))
		cancel()
	}
	// The calls waiting for a connection leave the pool's queue with
	// their contexts; those holding one stay. Until no more than limit
	// are left, or 10 s (a failure bound).
	left := runtime.NumGoroutine() - base
	for deadline := time.Now().Add(10 * time.Second); left > limit && time.Now().Before(deadline); left = runtime.NumGoroutine() - base {
		time.Sleep(10 * time.Millisecond) // a poll's interval
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("after %d Publish calls against a frozen Redis: %d goroutines left behind (stacks %d KiB); slowest Publish %v", calls, left, ms.StackInuse/1024, over)
	// Clean up: closing the client and the listener ends them.
	_ = rdb.Close()
	release()
	deadline := time.Now().Add(40 * time.Second)
	for runtime.NumGoroutine() > base+5 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("after closing the client: %d left", runtime.NumGoroutine()-base)
	require.LessOrEqual(t, left, limit, "goroutines left behind by bounded() while Redis is frozen, with a pool of %d connections", poolSize)
}
