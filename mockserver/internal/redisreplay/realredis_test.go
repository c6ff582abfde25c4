package redisreplay

// The store on a real redis-server (the fake runs no Lua): one key's
// proofs cannot fill Redis (a-rep13 F2), and a full Redis still answers
// reads.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/replaytest"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// requireRedisEnv is redisstore/redistest's RequireEnv: under it (CI) a
// test that needs redis-server fails where none is installed.
const requireRedisEnv = "ORGAUTHZ_REQUIRE_REDIS"

// startRedisServer starts redis-server (or valkey-server) on loopback with
// args after its own, without persistence, stopped when the test ends, and
// returns its redis:// URL. It skips t where neither is installed, unless
// requireRedisEnv=1 (CI), where it fails.
func startRedisServer(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		bin, err = exec.LookPath("valkey-server")
	}
	if err != nil {
		if os.Getenv(requireRedisEnv) == "1" {
			t.Fatalf("neither redis-server nor valkey-server is on PATH and %s=1 requires one", requireRedisEnv)
		}
		t.Skip("needs redis-server, which is not on PATH; CI (.ci/run) runs it")
	}
	for range 3 { // a free port can be taken between probe and bind
		ln := testkit.Must(net.Listen("tcp", "127.0.0.1:0"))(t)
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		require.NoError(t, ln.Close())
		cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", t.TempDir()}, args...)...)
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		addr := "127.0.0.1:" + port
		if pinged(addr, exited) {
			return "redis://" + addr
		}
	}
	t.Fatal("redis-server did not start")
	return ""
}

// pinged reports whether the server at addr answers PING within 10 s,
// false as soon as its process exited.
func pinged(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			n, _ := c.Read(buf)
			_ = c.Close()
			if string(buf[:n]) == "+PONG\r\n" {
				return true
			}
		}
		select {
		case <-exited:
			return false
		case <-time.After(20 * time.Millisecond): // polling the server's start, not ordering the test
		}
	}
	return false
}

// TestOneKeyCannotFillRedis: the reference server's -redis store charges
// each proof to its key as redisstore's does. Two replicas' Verifiers,
// each with a per-key limit of 1,000, on a Redis of 2 MB (noeviction):
// one key's flood of 5,000 proofs never fills Redis (no store outage), as
// the key holds at most its limit of records, the oldest dropped to make
// room; a proof is refused (dpop.ErrReplayCacheFull) only once its key
// dropped a record of its own second, never below the limit; a dropped
// proof's replay is refused; the key's proof of the next second passes
// (a-fix13d: a count that refused a busy key for its whole window locked
// out every caller of a service signing with it); another key's first
// proof, at either replica, is accepted.
func TestOneKeyCannotFillRedis(t *testing.T) {
	t.Parallel()
	addr := startRedisServer(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	s := settledStore(t, addr)
	const limit = 1000
	a := testkit.Must(dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithReplayKeyLimit(limit)))(t)
	b := testkit.Must(dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithReplayKeyLimit(limit)))(t)
	replaytest.FloodOneKey(t, a, b, "https://api.example.test/orders", limit, func() int { return dbsize(t, addr) }, 16)
}

// dbsize returns the number of keys of the redis-server at addr.
func dbsize(t *testing.T, addr string) int {
	t.Helper()
	conn := testkit.Must(net.Dial("tcp", strings.TrimPrefix(addr, "redis://")))(t)
	defer conn.Close()
	testkit.Must(conn.Write([]byte("DBSIZE\r\n")))(t)
	line := testkit.Must(bufio.NewReader(conn).ReadString('\n'))(t)
	n := testkit.Must(strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, ":"))))(t, "DBSIZE answered %q", line)
	return n
}

// TestRecordedAnswersOnAFullRedis: a Redis full to its maxmemory refuses
// every write, the marker's high-water among them; a read whose only
// write due is the high-water still answers (a record written before is
// found, another is not), and a write is still refused.
func TestRecordedAnswersOnAFullRedis(t *testing.T) {
	t.Parallel()
	s := settledStore(t, startRedisServer(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction"))
	ctx := t.Context()
	since := time.Now().Add(-time.Minute)
	first := testkit.Must(s.Remember(ctx, "revoked", time.Now().Add(time.Hour)))(t)
	require.True(t, first)

	// The marker's high-water put 5 s back: the next read's script is
	// due to raise it (one write a second), whatever the test's pace.
	c, _ := testkit.Must2(s.get(ctx))(t)
	defer s.put(c, true)
	replies := testkit.Must(c.do(ctx, []string{"EVAL", `local ms, r, hw, gen = string.match(redis.call('GET', KEYS[1]), '^(%d+)@(%x+)@(%d+)@(%d+)$')
redis.call('SET', KEYS[1], ms .. '@' .. r .. '@' .. string.format('%.0f', tonumber(hw) - 5000) .. '@' .. gen)
return 1`, "1", "p:since"}))(t)
	require.NoError(t, replies[0].err)
	require.Equal(t, "1", replies[0].s)

	// Fill Redis to its bound, as one flooding caller did.
	pad := strings.Repeat("x", 4096)
	filled := false
	for i := range 10_000 {
		replies := testkit.Must(c.do(ctx, []string{"SET", fmt.Sprintf("pad:%d", i), pad}))(t)
		if replies[0].err != nil {
			require.ErrorContains(t, replies[0].err, "OOM")
			filled = true
			break
		}
	}
	require.True(t, filled, "Redis never refused a write")

	found, err := s.Recorded(ctx, "revoked", since)
	require.NoError(t, err, "a read on a full Redis whose high-water was due")
	require.True(t, found)
	found = testkit.Must(s.Recorded(ctx, "never", since))(t)
	require.False(t, found)
	_, err = s.Remember(ctx, "a proof", time.Now().Add(time.Hour))
	require.Error(t, err, "a write on a full Redis")
}
