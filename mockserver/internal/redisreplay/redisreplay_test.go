package redisreplay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/leakcheck"
	"github.com/orgauthz/orgauthz/internal/onetime"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}

// fakeRedis is a RESP2 server on loopback that answers each command with
// what answer returns (a raw RESP reply), and counts connections. The
// real server is exercised from redisstore's tests (the mockserver binary
// with -redis against redis-server).
type fakeRedis struct {
	addr   string
	answer func(cmd []string) string

	mu       sync.Mutex
	cmds     [][]string
	open     int
	maxOpen  int
	hold     chan struct{} // when set, replies wait for it to close
	accepted chan struct{}
}

func startFake(t *testing.T, answer func(cmd []string) string) *fakeRedis {
	t.Helper()
	ln := testkit.Must(net.Listen("tcp", "127.0.0.1:0"))(t)
	f := &fakeRedis{addr: ln.Addr().String(), answer: answer, accepted: make(chan struct{}, 1000)}
	var wg sync.WaitGroup
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			conns = append(conns, c)
			f.open++
			f.maxOpen = max(f.maxOpen, f.open)
			f.mu.Unlock()
			f.accepted <- struct{}{}
			wg.Go(func() { f.serve(c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		f.mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		f.mu.Unlock()
		wg.Wait()
	})
	return f
}

func (f *fakeRedis) serve(c net.Conn) {
	defer func() {
		f.mu.Lock()
		f.open--
		f.mu.Unlock()
	}()
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.cmds = append(f.cmds, cmd)
		hold := f.hold
		f.mu.Unlock()
		if hold != nil {
			<-hold
		}
		if _, err := io.WriteString(c, f.answer(cmd)); err != nil {
			return
		}
	}
}

func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	cmd := make([]string, n)
	for i := range cmd {
		head, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		l, err := strconv.Atoi(strings.TrimSpace(head[1:]))
		if err != nil || l < 0 || l > 1<<16 {
			return nil, errors.New("bad bulk length")
		}
		arg := make([]byte, l+2) // bulk strings may hold newlines (the script)
		if _, err := io.ReadFull(r, arg); err != nil {
			return nil, err
		}
		cmd[i] = string(arg[:l])
	}
	return cmd, nil
}

func (f *fakeRedis) commands() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.cmds...)
}

// redisLike answers as a Redis server would: SET NX sets once, SET sets,
// GET reads, TIME is the wall clock, EVAL runs the marker's script.
func redisLike() func(cmd []string) string { return redisLikeAt(time.Now) }

// restartCommand is a command only the fake knows: the server crashes and
// comes back from a snapshot holding every key it had (the most a restore
// can keep), as a new run of itself (a new run_id).
const restartCommand = "FAKE-RESTART"

// redisLikeAt is redisLike with a server clock of its own. Its EVAL is
// replaymarker.Script's rule as Redis runs it (atomically, by the
// server's clock and run_id; redisstore's tests run the script itself on
// redis-server): a marker "<ms>@<run>@<hw>" of this run whose time and
// high-water are not after the clock (plus the margin) stands, its
// high-water raised once the clock passed it by a second, a bare "<ms>"
// or "<ms>@<run>" is bound to this run, and any other is replaced by the
// clock's time; a marker that stands answers that the clock ran ahead
// when the clock or the high-water is after the caller's reading plus
// the margin.
func redisLikeAt(clock func() time.Time) func(cmd []string) string {
	var mu sync.Mutex
	keys := map[string]string{}
	run := 1
	return func(cmd []string) string {
		mu.Lock()
		defer mu.Unlock()
		runID := fmt.Sprintf("%040x", run)
		switch strings.ToUpper(cmd[0]) {
		case restartCommand:
			run++
			return "+OK\r\n"
		case "AUTH", "SELECT":
			return "+OK\r\n"
		case "SET":
			if _, ok := keys[cmd[1]]; ok && slices.Contains(cmd, "NX") {
				return "$-1\r\n"
			}
			keys[cmd[1]] = cmd[2]
			return "+OK\r\n"
		case "GET":
			v, ok := keys[cmd[1]]
			if !ok {
				return "$-1\r\n"
			}
			return "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
		case "TIME":
			return timeReply(clock())
		case "EVAL": // the marker's and the one-time record's scripts, as Redis runs them: atomically, by its clock
			switch {
			case cmd[1] == onetime.Script && cmd[2] == "1":
				v, ok := keys[cmd[3]]
				switch {
				case ok:
					return bulkArray(onetime.Found, v)
				case cmd[4] == "":
					return bulkArray(onetime.Absent, "")
				}
				keys[cmd[3]] = cmd[4]
				return bulkArray(onetime.New, cmd[4])
			case cmd[1] == onetime.FinishScript && cmd[2] == "1":
				switch v, ok := keys[cmd[3]]; {
				case ok && v == cmd[4]:
					keys[cmd[3]] = onetime.Finished
					return bulk("1")
				}
				return bulk("0")
			case cmd[1] != replaymarker.Script || cmd[2] != "1":
				return "-NOSCRIPT unknown script\r\n"
			}
			margin, _ := strconv.ParseInt(cmd[4], 10, 64)
			if len(cmd) < 6 || len(cmd[5]) > 16 {
				return "-ERR the caller's clock reading is not a time in Unix milliseconds\r\n"
			}
			caller, err := strconv.ParseInt(cmd[5], 10, 64)
			if err != nil {
				return "-ERR the caller's clock reading is not a time in Unix milliseconds\r\n"
			}
			now := replaymarker.CeilMilli(clock())
			v, ok := keys[cmd[3]]
			parts := strings.Split(v, "@")
			ms := parts[0]
			m, err := strconv.ParseInt(ms, 10, 64)
			stands := ok && err == nil && len(parts) <= 3 && len(ms) <= 16 && m <= now+margin && (len(parts) == 1 || parts[1] == runID)
			var hw int64
			if stands && len(parts) == 3 {
				hw, err = strconv.ParseInt(parts[2], 10, 64)
				stands = err == nil && len(parts[2]) <= 16 && hw <= now+margin
			}
			if stands {
				reach := now
				if len(parts) < 3 || now >= hw+replaymarker.HighWaterStep {
					keys[cmd[3]] = ms + "@" + runID + "@" + strconv.FormatInt(now, 10)
				} else {
					reach = max(now, hw+replaymarker.HighWaterStep-1)
				}
				if reach > caller+margin {
					return bulkArray(ms, replaymarker.ClockAhead)
				}
				return bulkArray(ms, replaymarker.Vouched)
			}
			s := strconv.FormatInt(now, 10)
			keys[cmd[3]] = s + "@" + runID + "@" + s
			return bulkArray(s, replaymarker.Began)
		}
		return "-ERR unknown command\r\n"
	}
}

// clockRead stands, in withClockRead's commands, for a clock reading of
// this process.
const clockRead = "<clock>"

// withClockRead returns cmds with the marker script's caller's clock
// reading (its argument before the generation and the wrote flag)
// replaced by clockRead when it is a reading of this process's clock since
// from (Unix milliseconds).
func withClockRead(cmds [][]string, from int64) [][]string {
	out := make([][]string, len(cmds))
	for i, cmd := range cmds {
		out[i] = cmd
		if len(cmd) == 8 && cmd[0] == "EVAL" && cmd[1] == replaymarker.Script {
			if ms, err := strconv.ParseInt(cmd[5], 10, 64); err == nil && ms >= from && ms <= time.Now().UnixMilli() {
				out[i] = append(slices.Clone(cmd[:5]), clockRead, cmd[6], cmd[7])
			}
		}
	}
	return out
}

// markerAt is the marker's time as answer holds it (the text before "@").
func markerAt(t *testing.T, answer func([]string) string, key string) string {
	t.Helper()
	r := answer([]string{"GET", key})
	_, v, ok := strings.Cut(r, "\r\n")
	require.True(t, ok, "GET %s answered %q", key, r)
	ms, _, _ := strings.Cut(strings.TrimSuffix(v, "\r\n"), "@")
	return ms
}

// bulkArray is an array reply of bulk strings.
func bulkArray(elems ...string) string {
	r := "*" + strconv.Itoa(len(elems)) + "\r\n"
	for _, e := range elems {
		r += "$" + strconv.Itoa(len(e)) + "\r\n" + e + "\r\n"
	}
	return r
}

// bulk is a bulk string reply.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// timeReply is TIME's answer at t.
func timeReply(t time.Time) string {
	sec, usec := strconv.FormatInt(t.Unix(), 10), strconv.Itoa(t.Nanosecond()/1000)
	return "*2\r\n$" + strconv.Itoa(len(sec)) + "\r\n" + sec + "\r\n$" + strconv.Itoa(len(usec)) + "\r\n" + usec + "\r\n"
}

// settledStore opens a store on rawURL and, through it, marks its
// keyspace as an hour old (unless the server refuses).
func settledStore(t *testing.T, rawURL string) *Store {
	t.Helper()
	s := openStore(t, rawURL, "p:")
	_ = setMarker(t, s, strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10))
	return s
}

// openStore opens a Store at rawURL with prefix, closed when the test ends.
func openStore(t *testing.T, rawURL, prefix string) *Store {
	t.Helper()
	s := testkit.Must(Open(rawURL, prefix))(t)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// setMarker writes text as the keyspace marker p:since of s's server.
func setMarker(t *testing.T, s *Store, text string) error {
	t.Helper()
	c, _, err := s.get(t.Context())
	require.NoError(t, err)
	_, err = c.do(t.Context(), []string{"SET", "p:since", text})
	s.put(c, err == nil)
	return err
}

func TestOpenURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, addr, user, pass string
		db                    int
		err                   string
	}{
		{url: "redis://127.0.0.1:6380", addr: "127.0.0.1:6380"},
		{url: "redis://localhost", addr: "localhost:6379"},
		{url: "redis://:pw@h:1/2", addr: "h:1", pass: "pw", db: 2},
		{url: "redis://u:pw@h:1", addr: "h:1", user: "u", pass: "pw"},
		{url: "redis://pw@h:1", addr: "h:1", pass: "pw"},
		{url: "rediss://h:1", err: "TLS) is not supported"},
		{url: "http://h:1", err: "the scheme must be redis://"},
		{url: "redis:///0", err: "the host is missing"},
		{url: "redis://h/x", err: "the path must be a database number"},
		{url: "redis://h/?db=1", err: "a query or fragment is not supported"},
		{url: "redis://u:secret@h/x", err: "the path must be a database number"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			s, err := Open(tc.url, "")
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.addr, s.addr)
			require.Equal(t, tc.user, s.username)
			require.Equal(t, tc.pass, s.password)
			require.Equal(t, tc.db, s.db)
			require.Equal(t, DefaultPrefix, s.prefix)
		})
	}
}

// TestRememberSpeaksRESP: the store authenticates and selects the
// database once per connection, sends SET NX PXAT with until rounded up to
// the millisecond, and reports first, not first, and the server's errors.
func TestRememberSpeaksRESP(t *testing.T) {
	t.Parallel()
	from := time.Now().UnixMilli()
	f := startFake(t, redisLike())
	s := settledStore(t, "redis://u:pw@"+f.addr+"/3")
	until := time.UnixMilli(4_000_000_000_000).Add(time.Microsecond)
	for i, want := range []bool{true, false} {
		first := testkit.Must(s.Remember(t.Context(), "k", until))(t, "call %d", i)
		require.Equal(t, want, first, "call %d", i)
	}
	cmds := f.commands()
	require.Equal(t, []string{"AUTH", "u", "pw"}, cmds[0])
	require.Equal(t, []string{"SELECT", "3"}, cmds[1])
	require.Equal(t, "p:since", cmds[2][1], "settledStore's marker")
	require.Equal(t, []string{"SET", "p:k", "1", "NX", "PXAT", "4000000000001"}, cmds[3])
	require.Equal(t, []string{"EVAL", replaymarker.Script, "1", "p:since", strconv.FormatInt(dpop.ReplayStoreMargin.Milliseconds(), 10), clockRead, "0", "1"},
		withClockRead(cmds, from)[4], "the marker decided by the server, after the record, in the same round trip, with the process's clock reading, the generation seen (the fake answers none) and that a record was written")
	require.Len(t, cmds, 7, "one connection: AUTH and SELECT once")

	for _, tc := range []struct {
		name, reply, err string
	}{
		{"error reply", "-OOM command not allowed\r\n", "redis: OOM command not allowed"},
		{"garbage", "!!\r\n", "protocol error"},
		{"huge bulk", "$100000\r\n", "protocol error"},
		{"unterminated", "+OK\n", "protocol error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startFake(t, func([]string) string { return tc.reply })
			s := settledStore(t, "redis://"+f.addr)
			first, err := s.Remember(t.Context(), "k", until)
			require.ErrorContains(t, err, tc.err)
			require.False(t, first)
		})
	}
}

// TestRememberRefusesWhileTheKeyspaceIsNew: the marker decides, as in
// redisstore: the proof that finds the keyspace empty is refused and the
// marker written from the server's clock (TIME), not the replica's; a
// proof that may have been accepted before it is refused.
func TestRememberRefusesWhileTheKeyspaceIsNew(t *testing.T) {
	t.Parallel()
	began := time.Now().Add(-time.Hour).Truncate(time.Millisecond) // the server's clock, an hour behind the replica's
	f := startFake(t, redisLikeAt(func() time.Time { return began }))
	s := openStore(t, "redis://"+f.addr, "")
	window := func(iat time.Time) time.Time { return iat.Add(60*time.Second + time.Minute) }
	_, err := s.Remember(t.Context(), "a", window(time.Now()))
	require.ErrorIs(t, err, errKeyspaceNew)
	cmds := f.commands()
	require.Equal(t, "EVAL", cmds[len(cmds)-1][0], "the server decides the marker")
	require.Equal(t, strconv.FormatInt(began.UnixMilli(), 10), markerAt(t, f.answer, DefaultPrefix+sinceKey), "from its clock")

	_, err = s.Remember(t.Context(), "b", window(began.Add(10*time.Second+time.Minute-time.Millisecond)))
	require.ErrorIs(t, err, errKeyspaceNew, "just inside the window")
	first := testkit.Must(s.Remember(t.Context(), "c", window(began.Add(10*time.Second+time.Minute))))(t)
	require.True(t, first)
}

// TestRememberRewritesAMarkerThatCannotBeRight: a marker dated after the
// server's clock (beyond the margin) or that is not a number is rewritten
// from TIME, and the keyspace's window starts again: no replica's clock
// locks the others out. One within the margin is kept.
func TestRememberRewritesAMarkerThatCannotBeRight(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Millisecond)
	for _, tc := range []struct {
		name, marker string
		rewritten    bool
	}{
		{"a day ahead", strconv.FormatInt(now.Add(24*time.Hour).UnixMilli(), 10), true},
		{"not a number", "yesterday", true},
		{"within the margin", strconv.FormatInt(now.Add(30*time.Second).UnixMilli(), 10), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			answer := redisLikeAt(func() time.Time { return now })
			answer([]string{"SET", "p:since", tc.marker})
			f := startFake(t, answer)
			s := openStore(t, "redis://"+f.addr, "p:")
			_, err := s.Remember(t.Context(), "a", now.Add(2*time.Minute))
			require.ErrorIs(t, err, errKeyspaceNew)
			cmds := f.commands()
			require.Equal(t, "EVAL", cmds[len(cmds)-1][0], "the server decides the marker")
			if !tc.rewritten {
				require.Equal(t, tc.marker, markerAt(t, answer, "p:since"), "kept")
				return
			}
			require.Equal(t, strconv.FormatInt(now.UnixMilli(), 10), markerAt(t, answer, "p:since"), "from its clock")
			first := testkit.Must(s.Remember(t.Context(), "b", now.Add(11*time.Minute)))(t)
			require.True(t, first, "accepted once the window has passed since the rewrite")
		})
	}
}

// TestRememberStopsAtTheContext: a server that never answers holds a
// call only until its context ends; the connection is not reused.
func TestRememberStopsAtTheContext(t *testing.T) {
	t.Parallel()
	f := startFake(t, redisLike())
	s := settledStore(t, "redis://"+f.addr)
	<-f.accepted // settledStore's connection,
	s.drain()    // closed: the call below dials
	release := make(chan struct{})
	f.mu.Lock()
	f.hold = release
	f.mu.Unlock()
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-f.accepted
		cancel()
	}()
	_, err := s.Remember(ctx, "k", time.Now().Add(time.Hour))
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, s.idle, "a connection cut mid-reply went back to the pool")
}

// TestPoolIsBounded: many concurrent calls share at most MaxConns
// connections.
func TestPoolIsBounded(t *testing.T) {
	t.Parallel()
	f := startFake(t, redisLike())
	s := settledStore(t, "redis://"+f.addr)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := range 4 * MaxConns {
		wg.Go(func() {
			if _, err := s.Remember(t.Context(), "k"+strconv.Itoa(i), time.Now().Add(time.Hour)); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	require.Zero(t, failed.Load())
	f.mu.Lock()
	defer f.mu.Unlock()
	require.LessOrEqual(t, f.maxOpen, MaxConns)
}

// TestRememberRedialsAClosedIdleConnection: an idle connection the server
// closed (a restart) costs no refused proof: the call retries once on a
// new connection.
func TestRememberRedialsAClosedIdleConnection(t *testing.T) {
	t.Parallel()
	f := startFake(t, redisLike())
	s := settledStore(t, "redis://"+f.addr)
	first := testkit.Must(s.Remember(t.Context(), "a", time.Now().Add(time.Hour)))(t)
	require.True(t, first)
	c := <-s.idle
	_ = c.nc.Close() // as the server's end closing: the next write or read fails
	s.idle <- c
	first = testkit.Must(s.Remember(t.Context(), "b", time.Now().Add(time.Hour)))(t)
	require.True(t, first)
}

// TestRememberLateMarkerWriteNeverMovesMarkerEarlier: a replica finds a
// marker dated in the future and its write of the marker is delivered
// late, after Redis lost its keys and another replica wrote a newer
// marker (T3). The marker stays T3, and a proof that only the older
// marker would let through is refused (issue 24).
func TestRememberLateMarkerWriteNeverMovesMarkerEarlier(t *testing.T) {
	t.Parallel()
	t0 := time.Now().Truncate(time.Millisecond)
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	redis := redisLikeAt(func() time.Time { return time.Unix(0, clock.Load()) })
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f := startFake(t, func(cmd []string) string {
		if w := strings.ToUpper(cmd[0]); (w == "SET" && !slices.Contains(cmd, "NX") || w == "EVAL") && slices.Contains(cmd, "p:since") {
			once.Do(func() { close(held); <-release })
		}
		return redis(cmd)
	})
	redis([]string{"SET", "p:since", strconv.FormatInt(t0.Add(time.Hour).UnixMilli(), 10)})
	s := openStore(t, "redis://"+f.addr, "p:")

	done := make(chan error, 1)
	go func() {
		_, err := s.Remember(context.Background(), "y", t0.Add(time.Hour))
		done <- err
	}()
	<-held // the replica read the future marker and TIME (T0); its write is in flight
	// Redis loses its keys, its clock moves on, another replica writes
	// the marker T3 (within the margin of this process's clock: Redis's
	// clock ahead by more is refused as such).
	t3 := t0.Add(dpop.ReplayStoreMargin / 2)
	clock.Store(t3.UnixNano())
	redis([]string{"SET", "p:since", strconv.FormatInt(t3.UnixMilli(), 10)})
	close(release)
	<-done
	require.Equal(t, strconv.FormatInt(t3.UnixMilli(), 10), markerAt(t, redis, "p:since"),
		"the late write must not move the marker earlier than T3")

	lifetime := dpop.DefaultMaxAge + dpop.DefaultMaxSkew + 2*dpop.ReplayStoreMargin // the default iat window
	first, err := s.Remember(t.Context(), "p", t0.Add(lifetime+time.Second))
	require.ErrorIs(t, err, errKeyspaceNew, "a proof only a marker before T3 would accept is refused")
	require.False(t, first)
}
