// Package redisreplay is the reference server binary's dpop.ReplayStore on
// Redis or Valkey: a minimal RESP2 client that speaks only what the store
// needs (AUTH, SELECT, SET NX PXAT, GET), so that the root module, which
// holds the binary, requires no Redis client (users of pep must not
// download one). Services use github.com/orgauthz/orgauthz/redisstore,
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
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
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
	// maxBulk bounds a bulk reply the store reads (its marker is a number).
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
	now      func() time.Time

	slots chan struct{} // one per connection open or being opened
	idle  chan *conn
}

var _ dpop.ReplayStore = (*Store)(nil)

// Open returns a Store for the server rawURL names,
// redis://[[user]:password@]host[:port][/db], with keys under prefix
// (DefaultPrefix when empty), for Verifiers of the default iat window. It
// connects lazily: a server that is down makes calls fail, not Open. Its
// errors never hold the URL's password (nor its user information).
func Open(rawURL, prefix string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %s", parseProblem(err))
	}
	switch {
	case u.Scheme == "rediss":
		return nil, errors.New("redis URL: rediss (TLS) is not supported by the reference server; reach Redis on a private network or through a TLS tunnel")
	case u.Scheme != "redis":
		return nil, fmt.Errorf("redis URL %q: the scheme must be redis://", redacted(u))
	case u.Hostname() == "":
		return nil, fmt.Errorf("redis URL %q: the host is missing (redis://host:6379)", redacted(u))
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("redis URL %q: a query or fragment is not supported", redacted(u))
	}
	s := &Store{addr: u.Host, prefix: prefix, now: time.Now,
		lifetime: dpop.DefaultMaxAge + dpop.DefaultMaxSkew + 2*dpop.ReplayStoreMargin,
		slots:    make(chan struct{}, MaxConns), idle: make(chan *conn, MaxConns)}
	if u.Port() == "" {
		s.addr = net.JoinHostPort(u.Hostname(), "6379")
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if u.User != nil {
		s.username = u.User.Username()
		s.password, _ = u.User.Password()
		if s.password == "" { // redis://password@host
			s.username, s.password = "", s.username
		}
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if s.db, err = strconv.Atoi(p); err != nil || s.db < 0 {
			return nil, fmt.Errorf("redis URL %q: the path must be a database number", redacted(u))
		}
	}
	return s, nil
}

// Close closes the idle connections. Calls in progress finish on theirs.
func (s *Store) Close() error {
	for {
		select {
		case c := <-s.idle:
			_ = c.nc.Close()
			<-s.slots
		default:
			return nil
		}
	}
}

// errKeyspaceNew is the error of a proof the store cannot vouch for: it
// could have been accepted before the keyspace's marker.
var errKeyspaceNew = errors.New("redis: the replay keyspace is younger than the proof's window (Redis lost its keys, or is new)")

// Remember records key until until with SET NX PXAT and reports whether it
// was not recorded already; it fails when the keyspace is younger than the
// proof's window could reach back (redisstore.ReplayStore explains), and on
// any error of the connection or the server.
func (s *Store) Remember(ctx context.Context, key string, until time.Time) (bool, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, CallTimeout)
		defer cancel()
	}
	ms := ceilMilli(until)
	cmds := [][]string{
		{"SET", s.prefix + key, "1", "NX", "PXAT", strconv.FormatInt(ms, 10)},
		{"SET", s.prefix + sinceKey, strconv.FormatInt(ceilMilli(s.now()), 10), "NX"},
		{"GET", s.prefix + sinceKey},
	}
	var replies []reply
	for attempt := 0; ; attempt++ {
		c, reused, err := s.get(ctx)
		if err != nil {
			return false, err
		}
		replies, err = c.do(ctx, cmds...)
		s.put(c, err == nil)
		if err == nil {
			break
		}
		// An idle connection the server closed (a restart, its timeout)
		// fails at once: try once more on a new one. Had the first try
		// reached the server, the second finds the key and the proof is
		// refused, never accepted twice.
		if !reused || attempt > 0 || ctx.Err() != nil {
			return false, err
		}
	}
	for _, r := range replies {
		if r.err != nil {
			return false, r.err
		}
	}
	switch {
	case replies[0].null:
		return false, nil
	case replies[0].s != "OK":
		return false, fmt.Errorf("redis: SET answered %q", replies[0].s)
	}
	began, err := strconv.ParseInt(replies[2].s, 10, 64)
	if replies[2].null || err != nil {
		return false, errors.New("redis: the replay keyspace's marker is unreadable")
	}
	if ms < began+s.lifetime.Milliseconds() {
		return false, errKeyspaceNew
	}
	return true, nil
}

// ceilMilli returns t in Unix milliseconds, rounded up.
func ceilMilli(t time.Time) int64 {
	return (t.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
}

// get returns an idle connection (reused) or a new one, waiting for a
// slot within ctx.
func (s *Store) get(ctx context.Context) (c *conn, reused bool, err error) {
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
	if healthy {
		select {
		case s.idle <- c:
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
