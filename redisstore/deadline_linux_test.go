package redisstore_test

// Every blocking call returns by its caller's deadline whatever the Redis
// client's configuration: with Redis frozen (SIGSTOP: a paused container, a
// Redis stuck in a long fork or command) and a client that never times out
// on its own (no ContextTimeoutEnabled, as in the README, and no read or
// write timeout), Purge, PurgeAll and Remember return their context's
// error, and Close returns, while Redis is still frozen.

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// returnsWhileFrozen runs f and fails the test unless it returns; without
// the bound, go-redis waits for a frozen Redis for ever (the watchdog only
// keeps the failure from hanging the run).
func returnsWhileFrozen(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return while Redis was frozen", what)
	}
}

func TestBlockingCallsReturnByTheirDeadlineWhenRedisFreezes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	require.True(t, srv.Real(), "freezing needs redis-server, on PATH here and in CI")
	// No ContextTimeoutEnabled, and no timeout of the client's own.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: -1, WriteTimeout: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	gw := startGateway(t)
	a := replica(t, gw, rdb, "deadline")
	waitFor(t, "the replica trusts its cache", 10*time.Second, trusted(a))
	tok := revocable(gw, "bob")
	cache(t, tok, a)
	store := redisstore.NewReplayStore(rdb, "deadline:")
	// A first Remember opens the pool's connection while Redis runs.
	_, err := store.Remember(t.Context(), "warm", time.Now().Add(time.Minute))
	require.Error(t, err, "the keyspace is new: the store refuses, having answered")

	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	t.Cleanup(func() { _ = srv.Signal(syscall.SIGCONT) }) // before the replica's Close, on failure
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Purge", func(ctx context.Context) error { return a.Purge(ctx, tok) }},
		{"PurgeAll", func(ctx context.Context) error { return a.PurgeAll(ctx) }},
		{"Remember", func(ctx context.Context) error {
			_, err := store.Remember(ctx, "proof", time.Now().Add(time.Minute))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			var err error
			returnsWhileFrozen(t, tc.name, func() { err = tc.call(ctx) })
			require.ErrorIs(t, err, context.DeadlineExceeded)
		})
	}
	returnsWhileFrozen(t, "Close", func() { require.NoError(t, a.Close()) })
	require.NoError(t, srv.Signal(syscall.SIGCONT))
}
