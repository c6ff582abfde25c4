// Package redisreplay is the reference server binary's dpop.ReplayStore on
// Redis or Valkey: a minimal RESP2 client that speaks only what the store
// needs (AUTH, SELECT, SET NX PXAT, GET, and EVAL of the marker's and
// the one-time record's scripts), so that the root module, which holds
// the binary, requires no
// Redis client (users of pep must not download one). Services use github.com/orgauthz/orgauthz/redisstore,
// which runs on go-redis; this package keeps the same keys and rules
// (redisstore.ReplayStore documents them) for one server at a time: no
// Cluster, Sentinel or TLS.
package redisreplay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/onetime"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
)

// Defaults of a Store.
const (
	// DefaultPrefix is the prefix of the store's keys.
	DefaultPrefix = "orgauthz:mockserver:dpop:"
	// MaxConns bounds the connections a Store holds open at once; a call
	// beyond waits for one, within its context.
	MaxConns = 16
	// DialTimeout bounds connecting (and AUTH and SELECT) when the call's
	// context allows longer.
	DialTimeout = 2 * time.Second
	// CallTimeout bounds a call whose context has no deadline.
	CallTimeout = 2 * time.Second
	// maxBulk bounds a bulk reply the store reads (a key's record, the
	// marker's time).
	maxBulk = 64
)

// sinceKey is the key, after the prefix, of the keyspace's marker (the
// same as redisstore.SinceKey).
const sinceKey = "since"

// Store is a dpop.ReplayStore on one Redis server. It is safe for
// concurrent use; Close it when done.
type Store struct {
	addr     string
	username string
	password string
	db       int
	prefix   string
	// lifetime is how long before its until a record may have been
	// taken (the Verifier's maxAge + maxSkew, plus twice the margin).
	lifetime time.Duration
	// gen is the highest generation of the marker seen (replaymarker).
	gen replaymarker.Generation

	slots chan struct{} // one per connection open or being opened
	idle  chan *conn
	// closed is set by Close: no connection is lent or pooled after it.
	closed atomic.Bool
}

var _ dpop.ChargedReplayStore = (*Store)(nil)

// Open returns a Store for the server rawURL names,
// redis://[[user]:password@]host[:port][/db], with keys under prefix
// (DefaultPrefix when empty), for Verifiers of the default iat window. It
// connects lazily: a server that is down makes calls fail, not Open. Its
// errors name what is wrong and hold nothing of the URL's text (redact.go).
func Open(rawURL, prefix string) (*Store, error) {
	ep, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	s := &Store{addr: ep.addr(), username: ep.username, password: ep.password, db: ep.db, prefix: prefix,
		lifetime: dpop.DefaultMaxAge + dpop.DefaultMaxSkew + 2*dpop.ReplayStoreMargin,
		slots:    make(chan struct{}, MaxConns), idle: make(chan *conn, MaxConns)}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	return s, nil
}

// Close closes the idle connections; calls in progress finish on theirs,
// which are closed as they end, and later calls fail with errClosed.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.drain()
	return nil
}

// errClosed is the error of a call after Close.
var errClosed = errors.New("redis: the store is closed")

// drain closes the idle connections.
func (s *Store) drain() {
	for {
		select {
		case c := <-s.idle:
			_ = c.nc.Close()
			<-s.slots
		default:
			return
		}
	}
}

// markers reads the marker's script's answers; its errors are the
// store's about the keyspace.
var (
	markers                       = replaymarker.NewReader("redis: ")
	errKeyspaceNew, errClockAhead = markers.KeyspaceNew, markers.ClockAhead
)

// Remember records key until until with SET NX PXAT and reports whether it
// was not recorded already; it fails when the keyspace is younger than the
// proof's window could reach back, by the marker as the server decides it
// in the same round trip (EVAL of replaymarker.Script, after the SET: by
// its own clock and run_id, so a restart or a restore from a snapshot
// begins the keyspace again; redisstore.ReplayStore explains), and on any
// error of the connection or the server.
func (s *Store) Remember(ctx context.Context, key string, until time.Time) (bool, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	ms := replaymarker.CeilMilli(until)
	cmds := [][]string{
		{"SET", s.prefix + key, "1", "NX", "PXAT", strconv.FormatInt(ms, 10)},
		s.markerCommand(true),
	}
	c, replies, err := s.exchange(ctx, cmds)
	if err != nil {
		return false, err
	}
	s.put(c, true)
	switch set := replies[0]; {
	case set.err != nil:
		return false, set.err
	case set.arr == nil && set.null:
		return false, nil
	case set.arr != nil || set.s != "OK":
		return false, fmt.Errorf("redis: SET answered %q", set.s)
	}
	return markers.First(&s.gen, ms, s.lifetime, replies[1])
}

// errOverLimit is the error of a proof dated no later than a record its
// key had to drop to stay within the limit (RememberCharged): the Verifier
// refuses it with dpop.ErrReplayCacheFull, that key's alone (the server
// answers 503 to that proof only: the key's next fresh proof passes).
var errOverLimit = fmt.Errorf("redis: the proof is dated no later than a record its key dropped to stay within its limit (dpop.WithReplayKeyLimit): %w", dpop.ErrReplayCacheFull)

// RememberCharged is Remember, charging the record to owner (the
// Verifier's digest of the proof's key, dpop.ChargedReplayStore): the
// record and its charge are one EVAL of replaymarker.ChargeScript, in
// place of the SET, in the same round trip as the marker's script. The
// owner holds at most limit records (the reference server's 20,000, some
// 6 MB), its oldest dropped to make room, and a proof dated no later than
// the newest it dropped is refused with an error wrapping
// dpop.ErrReplayCacheFull: fresh proofs always pass, as in memory, and
// one client's key cannot fill Redis for every replica
// (redisstore.ReplayStore.RememberCharged, the same keys and rule).
func (s *Store) RememberCharged(ctx context.Context, key, owner string, limit int, iat, until time.Time) (bool, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	a := replaymarker.ChargeArgs(iat, until, limit)
	set, mark := replaymarker.ChargeKeys(s.prefix, owner)
	cmds := [][]string{
		{"EVAL", replaymarker.ChargeScript, "3", s.prefix + key, set, mark, a[0], a[1], a[2], a[3]},
		s.markerCommand(true),
	}
	c, replies, err := s.exchange(ctx, cmds)
	if err != nil {
		return false, err
	}
	s.put(c, true)
	rec := replies[0]
	if rec.err != nil {
		return false, rec.err
	}
	switch n, err := strconv.Atoi(rec.s); {
	case rec.arr != nil || rec.null || err != nil:
		return false, errors.New("redis: the record's script answered no number")
	case n == replaymarker.ChargeOverLimit:
		return false, errOverLimit
	case n == replaymarker.ChargeTaken:
		return false, nil
	case n != replaymarker.ChargeFirst:
		return false, fmt.Errorf("redis: the record's script answered %d", n)
	}
	return markers.First(&s.gen, replaymarker.CeilMilli(until), s.lifetime, replies[1])
}

// bound gives ctx CallTimeout when it has no deadline.
func bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, CallTimeout)
}

// exchange sends cmds on a connection and returns it with the replies;
// the caller puts it back. An idle connection the server closed (a
// restart, its timeout) fails at once: it tries once more on a new one.
// Had the first try reached the server, the second of a Remember finds
// the key and the proof is refused, never accepted twice.
func (s *Store) exchange(ctx context.Context, cmds [][]string) (*conn, []reply, error) {
	for attempt := 0; ; attempt++ {
		c, reused, err := s.get(ctx)
		if err != nil {
			return nil, nil, err
		}
		replies, err := c.do(ctx, cmds...)
		if err == nil {
			return c, replies, nil
		}
		s.put(c, false)
		if !reused || attempt > 0 || ctx.Err() != nil {
			return nil, nil, err
		}
	}
}

// Recorded reports whether key was recorded (by Remember, or by SET with
// PXAT from another client of the keys) and has not expired. It fails when
// the keyspace is younger than since less dpop.ReplayStoreMargin (Redis
// lost its keys, restarted, or is new: a record made since since may be
// lost), by the marker as the server decides it, and on any error of the
// connection or the server. It sends GET of the key and EVAL of the
// marker's script, in one round trip.
func (s *Store) Recorded(ctx context.Context, key string, since time.Time) (bool, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	c, replies, err := s.exchange(ctx, [][]string{{"GET", s.prefix + key}, s.markerCommand(false)})
	if err != nil {
		return false, err
	}
	s.put(c, true)
	val := replies[0]
	if val.err != nil {
		return false, val.err
	}
	if val.arr != nil {
		return false, errors.New("redis: GET answered an array")
	}
	if _, err := markers.Vouch(&s.gen, since, replies[1]); err != nil {
		return false, err
	}
	return !val.null, nil
}

// RecordOnce records key until until, written by writer, unless it is
// recorded, and reports whether the record is the caller's: true when the
// call wrote it, or when writer wrote it (the call's own retry after a
// failure that came after its write reached Redis: its answer came past
// the call's deadline); false for another writer's record
// (mockserver.SharedStore). writer must be 1 to onetime.MaxWriter bytes;
// Remember's records hold "1". It decides first, by the marker's script
// (one round trip), whether the keyspace began no later than since less
// dpop.ReplayStoreMargin, as Recorded does, and fails with nothing
// written when it did not, or on any error before the write: a call that
// fails there changes nothing for its retry. The write is onetime.Script
// (EVAL: written unless there, and the value read back, in one atomic
// step), sent with the marker's script again on the same connection: a
// marker begun or changed between the two (Redis lost its keys or
// restarted meanwhile) fails the call too, the record then being in a
// keyspace that cannot vouch for since, which every retry's first step
// refuses. No DPoP proof window applies (Remember's). The two are
// compared as numbers (the script's answers parsed).
func (s *Store) RecordOnce(ctx context.Context, key, writer string, until, since time.Time) (bool, error) {
	if err := onetime.CheckWriter("redis: ", writer); err != nil {
		return false, err
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	c, replies, err := s.exchange(ctx, [][]string{s.markerCommand(false)})
	if err != nil {
		return false, err
	}
	began, err := markers.Vouch(&s.gen, since, replies[0])
	if err != nil {
		s.put(c, true)
		return false, err
	}
	replies, err = c.do(ctx, []string{"EVAL", onetime.Script, "1", s.prefix + key, writer, strconv.FormatInt(replaymarker.CeilMilli(until), 10), "0"},
		s.markerCommand(true))
	if err != nil {
		s.put(c, false)
		return false, err
	}
	s.put(c, true)
	rec, marker := replies[0], replies[1]
	if rec.err != nil {
		return false, rec.err
	}
	if err := markers.Same(&s.gen, began, marker); err != nil {
		return false, err // the keys may have been lost between the two
	}
	if len(rec.arr) != 2 || (rec.arr[0] != onetime.New && rec.arr[0] != onetime.Found) {
		return false, errors.New("redis: the one-time record's script answered no record")
	}
	return rec.arr[0] == onetime.New || rec.arr[1] == writer, nil
}

// Finish finishes key's one-time record, which writer's RecordOnce found
// its own, before the caller answers on it (mockserver.SharedStore), and
// reports whether this call finished it: one EVAL of onetime.FinishScript,
// after which the record holds onetime.Finished, its expiry kept, and no
// later RecordOnce or Finish of writer finds it its own. A record finished
// already, another writer's or none is false without an error; any error
// of the connection or the server is an error.
func (s *Store) Finish(ctx context.Context, key, writer string) (bool, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	c, replies, err := s.exchange(ctx, [][]string{{"EVAL", onetime.FinishScript, "1", s.prefix + key, writer}, s.markerCommand(true)})
	if err != nil {
		return false, err
	}
	s.put(c, true)
	switch r := replies[0]; {
	case r.err != nil:
		return false, r.err
	case r.arr != nil || r.null || (r.s != "1" && r.s != "0"):
		return false, errors.New("redis: finishing a one-time record: the script answered neither 1 nor 0")
	}
	// The marker's answer (a write: the generation rose) only raises what
	// this store has seen: the record is finished whatever it says.
	_, _, _ = markers.Result(&s.gen, replies[1])
	return replies[0].s == "1", nil
}

// markerCommand is EVAL of replaymarker.Script on the marker, with this
// process's clock reading: the server decides the marker in one atomic
// step, by its own clock and run_id (a marker of another run of the
// server, one that may have lost writes, is replaced, and so is one whose
// clock stepped back from a high-water), so a write delivered late never
// moves a newer marker earlier (as a SET of a TIME read before would), and
// a Redis clock ahead of the reading is answered as such. Every read of
// the marker is this script: one parser, one rule, shared with
// redisstore. wrote says that a record was written before it in the same
// round trip, which raises the marker's generation.
func (s *Store) markerCommand(wrote bool) []string {
	a := replaymarker.Args(&s.gen, wrote)
	return []string{"EVAL", replaymarker.Script, "1", s.prefix + sinceKey, a[0], a[1], a[2], a[3]}
}

// get returns an idle connection (reused) or a new one, waiting for a
// slot within ctx.
func (s *Store) get(ctx context.Context) (c *conn, reused bool, err error) {
	if s.closed.Load() {
		return nil, false, errClosed
	}
	select {
	case c := <-s.idle:
		return c, true, nil
	default:
	}
	select {
	case c := <-s.idle:
		return c, true, nil
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, false, fmt.Errorf("redis: waiting for a connection: %w", context.Cause(ctx))
	}
	c, err = s.dial(ctx)
	if err != nil {
		<-s.slots
		return nil, false, err
	}
	return c, false, nil
}

// put gives c back to the pool, or closes it (freeing its slot) when it
// failed: a connection that timed out mid-reply is out of step.
func (s *Store) put(c *conn, healthy bool) {
	if healthy && !s.closed.Load() {
		select {
		case s.idle <- c:
			if s.closed.Load() { // Close ran meanwhile, and may have drained before c came
				s.drain()
			}
			return
		default:
		}
	}
	_ = c.nc.Close()
	<-s.slots
}

// dial connects, authenticates and selects the database.
func (s *Store) dial(ctx context.Context) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", s.addr)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	c := &conn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}
	var setup [][]string
	switch {
	case s.username != "":
		setup = append(setup, []string{"AUTH", s.username, s.password})
	case s.password != "":
		setup = append(setup, []string{"AUTH", s.password})
	}
	if s.db != 0 {
		setup = append(setup, []string{"SELECT", strconv.Itoa(s.db)})
	}
	if len(setup) > 0 {
		replies, err := c.do(dctx, setup...)
		if err == nil {
			for _, r := range replies {
				if r.err != nil {
					err = r.err
					break
				}
			}
		}
		if err != nil {
			_ = nc.Close()
			return nil, err
		}
	}
	return c, nil
}
