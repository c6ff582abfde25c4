// Package redistest starts a Redis server for a test: a real redis-server
// (or valkey-server) on a free loopback port with persistence off, stopped
// when the test ends. Each run of a server (Start, Restart) has a directory
// of its own under the test's t.TempDir, so the RDB file a replica writes
// during a full sync never lands in the package directory, and every server
// starts empty. A server made another's primary (REPLICAOF) starts the full
// sync at once, without Redis's default 5 s wait for more replicas.
//
// Save and RestartFromSnapshot make a crash of a Redis with persistence:
// it comes back from its last snapshot, without the writes after it, as a
// new run of the server (a new run_id in INFO server).
//
// Start's arguments make a replica or a Cluster node; Signal freezes a
// server (SIGSTOP) and thaws it; Frozen is a listener that takes
// connections and never answers; a Proxy between the clients and a server
// drops or resets their connections (StartProxy).
//
// Where neither binary is on PATH, Start falls back to
// github.com/alicebob/miniredis/v2 in process and says so in the test log;
// it is given ROLE, INFO replication (role:master and a master_replid, a
// new one on every start and restart), INFO cluster, INFO memory and INFO
// stats (no memory limit, no eviction: miniredis never evicts) and INFO
// server (run_id only, a new one on every start and restart) for the
// commands redisstore sends, in scripts too;
// with ORGAUTHZ_REQUIRE_REDIS=1 in the environment (as .ci/run sets it) the
// absence of a real server fails the test instead, so CI proves the real one.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

// RequireEnv names the environment variable that, set to 1, makes a missing
// redis-server a test failure rather than a fallback to miniredis.
const RequireEnv = "ORGAUTHZ_REQUIRE_REDIS"

// startTimeout bounds how long Start and Restart wait for the server to
// answer PING.
const startTimeout = 15 * time.Second

// Server is a Redis server owned by one test. Its methods are safe for
// concurrent use.
type Server struct {
	t    testing.TB
	addr string
	bin  string // the real binary's path; empty when in process
	args []string
	mini *miniredis.Miniredis

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	dir  string // the running server's directory (its RDB file)
	// snap is miniredis's last Save: its string keys and their TTLs.
	snap map[string]savedKey
}

// savedKey is a string key in a miniredis snapshot.
type savedKey struct {
	val string
	ttl time.Duration
}

// Start starts a server for t and stops it in t's cleanup, with args, more
// redis-server arguments (a replica's --replicaof, a Cluster node's
// --cluster-enabled yes; the later of two wins), after its own. It fails t
// when no server can be started; given args, it skips t where only
// miniredis is at hand (and fails it under RequireEnv=1), since miniredis
// takes no arguments.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := binary()
	if bin == "" && len(args) > 0 && os.Getenv(RequireEnv) != "1" {
		t.Skipf("redistest: the arguments %q need redis-server, which is not on PATH; CI (.ci/run) runs it", args)
	}
	if bin == "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redistest: neither redis-server nor valkey-server is on PATH and %s=1 requires a real server (apt-get install redis-server)", RequireEnv)
		}
		t.Logf("redistest: redis-server is not on PATH: using miniredis in process; CI (.ci/run) runs the real server")
		return StartInProcess(t)
	}
	s := &Server{t: t, bin: bin, args: args}
	var err error
	for range 3 { // a free port can be taken between probe and bind
		if s.addr, err = freePort(); err != nil {
			continue
		}
		if err = s.run(t.TempDir()); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartInProcess starts the fallback, miniredis in process, whatever is
// on PATH (a test that proves both paths), and stops it in t's cleanup.
func StartInProcess(t testing.TB) *Server {
	t.Helper()
	mini := miniredis.NewMiniRedis()
	var err error
	for range 3 { // a free port can be taken between probe and bind
		var addr string
		if addr, err = freePort(); err != nil {
			continue
		}
		if err = mini.StartAddr(addr); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: miniredis: %v", err)
	}
	t.Cleanup(mini.Close)
	addCommands(t, mini)
	return &Server{t: t, addr: mini.Addr(), mini: mini}
}

// Miniredis returns the in-process server (StartInProcess, or Start's
// fallback), whose clock a test may set; nil for a real server.
func (s *Server) Miniredis() *miniredis.Miniredis { return s.mini }

// Real reports whether the server is a real redis-server or valkey-server
// process rather than miniredis.
func (s *Server) Real() bool { return s.bin != "" }

// Addr returns the server's host:port on 127.0.0.1.
func (s *Server) Addr() string { return s.addr }

// URL returns the server's address as a redis:// URL.
func (s *Server) URL() string { return "redis://" + s.addr }

// Client returns a new client of the server, closed in the test's cleanup.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop stops the server; its data is gone. Stop is idempotent.
func (s *Server) Stop() {
	if s.mini != nil {
		s.mini.Close()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Signal sends sig to the real server's process (SIGSTOP freezes it, as a
// paused container is; SIGCONT resumes it); Stop kills it frozen or not.
func (s *Server) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redistest: Signal: no redis-server process runs")
	}
	return s.cmd.Process.Signal(sig)
}

// Restart stops the server and starts it again on the same address, empty
// (persistence is off), as a crashed and restarted Redis comes back.
func (s *Server) Restart() {
	s.t.Helper()
	if s.mini != nil {
		s.mini.FlushAll()
		s.mini.Restart()
		addCommands(s.t, s.mini)
		return
	}
	s.Stop()
	if err := s.run(s.t.TempDir()); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// Save takes a snapshot of the server's data (SAVE), which
// RestartFromSnapshot comes back from. With miniredis it keeps the string
// keys of database 0 and their TTLs (what redisstore writes), and fails
// the test on a key of another type.
func (s *Server) Save() {
	s.t.Helper()
	if s.mini != nil {
		snap := map[string]savedKey{}
		for _, k := range s.mini.Keys() {
			v, err := s.mini.Get(k)
			if err != nil {
				s.t.Fatalf("redistest: Save: miniredis snapshots string keys only; %q is a %s", k, s.mini.Type(k))
			}
			snap[k] = savedKey{val: v, ttl: s.mini.TTL(k)}
		}
		s.mu.Lock()
		s.snap = snap
		s.mu.Unlock()
		return
	}
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	defer c.Close()
	if err := c.Save(context.Background()).Err(); err != nil {
		s.t.Fatalf("redistest: SAVE: %v", err)
	}
}

// RestartFromSnapshot kills the server (SIGKILL: nothing saved on the way
// out) and starts it again on the same address from its last Save (empty
// without one), as a crashed Redis with RDB persistence, or AOF that had
// not synced its last writes, comes back: the writes after the snapshot
// are lost, and the server is a new run of itself.
func (s *Server) RestartFromSnapshot() {
	s.t.Helper()
	if s.mini != nil {
		s.mu.Lock()
		snap := s.snap
		s.mu.Unlock()
		s.mini.Close()
		s.mini.FlushAll()
		if err := restartMini(s.mini); err != nil {
			s.t.Fatalf("redistest: restart: %v", err)
		}
		addCommands(s.t, s.mini)
		for k, v := range snap {
			if err := s.mini.Set(k, v.val); err != nil {
				s.t.Fatalf("redistest: restore %q: %v", k, err)
			}
			if v.ttl > 0 {
				s.mini.SetTTL(k, v.ttl)
			}
		}
		return
	}
	s.mu.Lock()
	dir := s.dir
	s.mu.Unlock()
	s.Stop()
	if err := s.run(dir); err != nil {
		s.t.Fatalf("redistest: restart from snapshot: %v", err)
	}
}

func (s *Server) run(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, port, _ := net.SplitHostPort(s.addr)
	// A directory per run: a replica's full sync writes an RDB file, which
	// a later server started in the same directory would load. A primary
	// sends its data to a new replica at once, rather than after
	// repl-diskless-sync-delay's default 5 s wait for more replicas.
	cmd := exec.Command(s.bin, append([]string{
		"--bind", "127.0.0.1", "--port", port,
		"--dir", dir, "--dbfilename", "redistest.rdb",
		"--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0",
		"--protected-mode", "no", "--loglevel", "warning"}, s.args...)...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	if err := waitReady(s.addr, done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return err
	}
	s.cmd, s.done, s.dir = cmd, done, dir
	return nil
}

// addCommands gives miniredis what it lacks of the commands redisstore
// sends: ROLE, INFO replication and INFO cluster (a single server is its
// own primary and no Cluster node, which redisstore.Invalidator checks at
// every publication), INFO memory and INFO stats (maxmemory 0, policy
// noeviction and evicted_keys 0, which is the truth: miniredis never
// evicts; the replay marker's script checks them; no calls in INFO
// commandstats, which the script reads too), and INFO
// server, which answers a run_id (redisstore's replay marker is bound to
// it), a new one each time addCommands runs: a restarted miniredis needs
// them again, and is a new run. The INFO hook answers in scripts too (they
// dispatch through the server); other INFO sections stay miniredis's own.
func addCommands(t testing.TB, mini *miniredis.Miniredis) {
	t.Helper()
	var id [20]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	info := "# Server\r\nredis_version:7.0.0-miniredis\r\nrun_id:" + hex.EncodeToString(id[:]) + "\r\n"
	var replid [20]byte
	if _, err := rand.Read(replid[:]); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	replication := "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:" + hex.EncodeToString(replid[:]) + "\r\n"
	mini.Server().SetPreHook(func(c *server.Peer, cmd string, args ...string) bool {
		if cmd != "INFO" || len(args) != 1 {
			return false
		}
		switch {
		case strings.EqualFold(args[0], "server"):
			c.WriteBulk(info)
		case strings.EqualFold(args[0], "replication"):
			c.WriteBulk(replication)
		case strings.EqualFold(args[0], "cluster"):
			c.WriteBulk("# Cluster\r\ncluster_enabled:0\r\n")
		case strings.EqualFold(args[0], "memory"):
			// miniredis has no memory limit and never evicts.
			c.WriteBulk("# Memory\r\nused_memory:0\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n")
		case strings.EqualFold(args[0], "stats"):
			c.WriteBulk("# Stats\r\nevicted_keys:0\r\n")
		case strings.EqualFold(args[0], "commandstats"):
			// no SWAPDB, MOVE, DEBUG or CONFIG RESETSTAT counted
			c.WriteBulk("# Commandstats\r\n")
		default:
			return false
		}
		return true
	})
	err := mini.Server().Register("ROLE", func(c *server.Peer, _ string, _ []string) {
		c.WriteLen(3)
		c.WriteBulk("master")
		c.WriteInt(0)
		c.WriteLen(0)
	})
	if err != nil && !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("redistest: %v", err)
	}
}

// Frozen listens on a free loopback port, as a frozen Redis does: it takes
// every connection and never answers. It returns the address and a
// function that closes the listener and every connection taken (a thawed
// or killed Redis), which waits for the accepting goroutine; it is
// idempotent and runs in t's cleanup too.
func Frozen(t testing.TB) (addr string, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // never answered
		}
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = ln.Close()
			<-accepted
			for _, c := range conns {
				_ = c.Close()
			}
		})
	}
	t.Cleanup(release)
	return ln.Addr().String(), release
}

func waitReady(addr string, exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if c.Ping(ctx).Err() == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited before answering PING (port taken?)", addr)
		case <-ctx.Done():
			return fmt.Errorf("redis-server on %s did not answer PING within %v", addr, startTimeout)
		case <-tick.C:
		}
	}
}

func binary() string {
	for _, name := range []string{"redis-server", "valkey-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// freePort returns a loopback address free now, on a port below Linux's
// ephemeral range (32768-60999 by default): a server restarted on its
// address (Restart, RestartFromSnapshot) finds it free again, where a
// port from that range could meanwhile be taken by any connection's local
// end or another test's listener on port 0.
// restartMini restarts m on its address, retrying a bounded number of
// times while the address is still in use: the old listener's sockets may
// not all be gone the moment Close returns, on a loaded machine.
func restartMini(m *miniredis.Miniredis) error {
	var err error
	for range 50 {
		if err = m.Restart(); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // a back-off between attempts, not a synchronisation
	}
	return err
}

func freePort() (string, error) {
	var err error
	for range 50 {
		addr := "127.0.0.1:" + strconv.Itoa(20000+mrand.IntN(32768-20000))
		var l net.Listener
		if l, err = net.Listen("tcp", addr); err == nil {
			_ = l.Close()
			return addr, nil
		}
	}
	return "", fmt.Errorf("no free loopback port between 20000 and 32767: %w", err)
}

// Name is a Redis address that a test switches, as an operator switches a
// DNS name or a proxy, or Sentinel the master it names, after a failover:
// a client Client made dials where Name points when it dials, and keeps
// the connections it made already. Point before the first dial.
type Name struct{ addr atomic.Value }

// Point makes the clients' next dials reach addr.
func (n *Name) Point(addr string) { n.addr.Store(addr) }

// Client returns a client with o that dials where n points, closed in t's
// cleanup.
func (n *Name) Client(t testing.TB, o redis.Options) *redis.Client {
	o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, n.addr.Load().(string))
	}
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
