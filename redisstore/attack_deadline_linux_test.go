package redisstore_test

// Attack (a-replicas): Purge and Close past their deadline when Redis is
// frozen (SIGSTOP: a paused container, a Redis stuck in a long fork or
// command), with the Redis client the README shows
// (redis.NewClient(&redis.Options{Addr: ...})).

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func startPlainRedis(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found")
	}
	port := freeClusterPort(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGCONT); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(t.Context()).Err() != nil {
		require.True(t, time.Now().Before(deadline))
		time.Sleep(20 * time.Millisecond)
	}
	return cmd, addr
}

// TestAttackPurgeOverrunsItsDeadlineWhenRedisFreezes: a replica made as the
// README shows; Redis is frozen; Purge with a 200 ms deadline returns
// seconds later, and Close (which waits for the subscription and the 401
// publications) also takes seconds.
func TestAttackPurgeOverrunsItsDeadlineWhenRedisFreezes(t *testing.T) {
	cmd, addr := startPlainRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr}) // as in the README
	t.Cleanup(func() { _ = rdb.Close() })
	gw := startGateway(t)
	a := replica(t, gw, rdb, "attack:deadline")
	waitFor(t, "the replica trusts its cache", 10*time.Second, trusted(a))
	tok := revocable(gw, "bob")
	cache(t, tok, a)

	require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := a.Purge(ctx, tok)
	took := time.Since(start)
	t.Logf("Purge with a 200 ms deadline returned after %v: %v", took.Round(time.Millisecond), err)
	start = time.Now()
	_ = a.Close()
	closeTook := time.Since(start)
	t.Logf("Close returned after %v", closeTook.Round(time.Millisecond))
	require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
	require.Less(t, took, time.Second, "BREAK: Purge returned %v past its 200 ms deadline", took-200*time.Millisecond)
}
