package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/ascii"
	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/internal/stripe"
	"github.com/orgauthz/orgauthz/internal/telemetry"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// Identity is what a Core needs to know of the client it serves.
type Identity struct {
	// Peer names the client and its server in errors and log lines.
	Peer transport.Peer
	// Scope is the client's instrumentation scope.
	Scope telemetry.Scope
	// URL is the server's base URL: its scheme, host and port become the
	// requests' server attributes.
	URL string
	// Attributes are set on every span and metric of the client.
	Attributes []attribute.KeyValue
	// NoToken says how to give the client a token, for the error of a
	// call made without one ("call SetToken or SetDPoPToken").
	NoToken string
	// Misconfigured says what to check when the server refuses the
	// client's requests as a whole (a 400 or 404), for a log line.
	Misconfigured string
}

// Core is what a decision client is made of beside its wire format. A
// client embeds one and sets it up once with Init; from then on it is safe
// for concurrent use.
type Core struct {
	who      Identity
	x        *transport.Exchanger
	timeout  time.Duration
	batch    int
	maxToken int
	cache    *decisions
	logger   *slog.Logger
	emitter  *events.Emitter
	now      func() time.Time
	tel      *telemetry.Telemetry
	// replicas is the invalidation channel's state; nil without one.
	replicas *replicas
	// flights coalesces identical requests (Send).
	flights Flights[flightKey, sent]
	// purges counts the purges of every cached decision (purgeAll): a
	// call reads it when it starts (Own, PerCall), and it is part of the
	// key that coalesces requests, so that no call that began after such a
	// purge shares the answer of a request sent before it.
	purges atomic.Uint64
	// grantTTL is the allow TTL: an answer that came later than it after
	// its send could not be stored on arrival (Send's storable).
	grantTTL time.Duration

	// token is the client's current token, read without a lock by every
	// call. tokenMu orders its changes and the events that report them, so
	// that subscribers see the events in the order of the changes.
	token   atomic.Pointer[Token]
	tokenMu sync.Mutex

	// seen holds the configuration-shaped causes already logged (logOnce).
	seenMu sync.Mutex
	seen   map[string]struct{}

	// The counters of Stats and of the metrics. Those every call answered
	// from the cache adds to are striped, so that cores do not contend on
	// one word; such a call counts only in hitAllowed or hitDenied, which
	// count both the call and its decision.
	calls, allowed, denied, errored stripe.Counter
	hitAllowed, hitDenied           stripe.Counter
	retries, coalesced, failClosed  atomic.Uint64
}

// Init sets c up for the client who: its transport, breaker, cache, event
// emitter and telemetry. s must have passed Validate. c must be the zero
// Core, in its final place: it is not copied afterwards.
func (c *Core) Init(s Settings, who Identity) error {
	pkg := who.Peer.Pkg()
	// The cache reads the real clock its own, cheaper way (the monotonic
	// clock alone, on every hit) unless a test gave the client a clock.
	var err error
	if c.cache, err = newDecisions(&s); err != nil {
		return fmt.Errorf("%s: WithCache: %w", pkg, err)
	}
	testClock := s.Now != nil
	if s.Now == nil {
		s.Now = time.Now
	}
	c.who, c.timeout, c.batch, c.maxToken, c.now = who, s.Timeout, s.BatchSize, s.MaxTokenBytes, s.Now
	c.grantTTL = s.AllowTTL
	c.flights.WaitHook = s.FlightWait
	c.logger = s.Logger
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	logger := c.logger
	c.x = &transport.Exchanger{Peer: who.Peer, Base: s.HTTPClient.Transport, Logger: logger}
	if c.x.Base == nil {
		c.x.Base, c.x.OwnsBase = transport.NewDefaultTransport(), true
	}
	c.x.Retry = transport.RetryPolicy{
		Max: s.RetryMax, MinWait: s.RetryMinWait, MaxWait: s.RetryMaxWait,
		AttemptTimeout: s.HTTPClient.Timeout, Logger: logger, Retries: &c.retries, Peer: who.Peer,
	}
	c.x.Breaker = transport.NewBreaker(s.BreakerFailures, s.BreakerCoolDown, s.Now, func(from, to transport.BreakerState) {
		logger.Warn(pkg+": circuit breaker changed", "from", from.String(), "to", to.String())
	})
	c.emitter = events.NewEmitter(func(ev events.Event, recovered any) {
		logger.Error(pkg+": event handler panicked", "event", ev.Kind.String(), "panic", fmt.Sprint(recovered))
	})
	for _, h := range s.Handlers {
		c.emitter.Subscribe(h)
	}
	// The invalidation channel before the telemetry, whose metrics read
	// it from another goroutine.
	if err := c.initReplicas(s.Invalidator, testClock); err != nil {
		return err
	}
	if c.tel, err = telemetry.New(who.Scope, c, (*Core).counts, s.TracerProvider, s.MeterProvider, who.URL, who.Attributes...); err != nil {
		c.closeReplicas()
		return fmt.Errorf("%s: setting up telemetry: %w", pkg, err)
	}
	c.x.Observe = c.tel
	return nil
}

// background logs, at Error, a panic of user code (what names it) that
// ran on a goroutine of the client's own in the background, which
// recovered it (safego) and goes on: the panic's text and stack, never a
// token (such code is given none). The log line is guarded too
// (logBackground).
func (c *Core) background(what string, p *safego.Panic) {
	c.logBackground(slog.LevelError, c.who.Peer.Pkg()+": "+what+" panicked; recovered, the client goes on",
		"panic", p.Text(), "stack", string(p.Stack))
}

// logBackground logs msg on a goroutine of the client's own: the logger
// is the user's code (WithLogger), and nothing recovers its panic there
// but this; a panic of the logger is dropped (logging it would call the
// same logger).
func (c *Core) logBackground(level slog.Level, msg string, args ...any) {
	_ = safego.Call(func() { c.logger.Log(context.Background(), level, msg, args...) })
}

// goBackground runs f on a goroutine of the client's own, in the
// background: the whole of f runs under one safego.Call, and a panic of
// it (user code: an Invalidator, a logger) is logged (background) and
// ends only f. Whatever f reserves it releases in a defer of its own, so
// that a panic or a runtime.Goexit of user code leaves nothing reserved.
func (c *Core) goBackground(what string, f func()) {
	go func() {
		if p := safego.Call(f); p != nil {
			c.background(what, p)
		}
	}()
}

// Telemetry returns the client's telemetry, for the spans of its calls.
func (c *Core) Telemetry() *telemetry.Telemetry { return c.tel }

// Logger returns the client's logger (one that discards without
// WithLogger).
func (c *Core) Logger() *slog.Logger { return c.logger }

// Timeout returns the client's timeout (WithTimeout).
func (c *Core) Timeout() time.Duration { return c.timeout }

// Closed reports whether Close was called.
func (c *Core) Closed() bool { return c.x.Closed() }

// Close makes every later call fail with ErrClosed and closes the
// connections of the transport Init made (not one the user gave): at once,
// and again as the requests under way end. It does not wait for them unless
// there is an Invalidator (closeReplicas: at most 2 s, for their 401s'
// purges, then at most 2 s for the Invalidator's calls to end).
func (c *Core) Close() {
	c.x.Close()
	c.closeReplicas()
}

// Fetch sends a request that carries no credential (a discovery document)
// through the base transport, without retries or the breaker; ErrClosed
// after Close. Close the response's body.
func (c *Core) Fetch(req *http.Request) (*http.Response, error) { return c.x.Fetch(req) }

// Counts are a snapshot of a client's counters, for its Stats, whose
// fields say what each counts (Requests is pep's GatewayRequests and
// authzen's PDPRequests; Decisions authzen's Evaluations, every decision
// returned; Received, Malformed, Gaps, Recoveries, PublishFailures and
// RefusalOverflows the Invalidation ones, zero without an Invalidator). Counters only
// grow; the cache's entries and bytes, the breaker's state and whether
// the cache is bypassed are those of now.
type Counts struct {
	Calls, Decisions, Requests, Retries, Coalesced         uint64
	CacheHits, CacheMisses, CacheEvictions                 uint64
	CacheEntries                                           int
	CacheBytes                                             int64
	FailClosed                                             uint64
	Breaker                                                transport.BreakerState
	Received, Malformed, Gaps, Recoveries, PublishFailures uint64
	RefusalOverflows                                       uint64
	Bypassed                                               bool
}

// Counts returns the client's counters. It is cheap and safe at any time.
func (c *Core) Counts() Counts {
	cs, entries, bytes := c.cache.stats()
	hits := c.hitAllowed.Load() + c.hitDenied.Load()
	failClosed := c.failClosed.Load()
	n := Counts{
		Calls:          c.calls.Load() + hits,
		Decisions:      c.allowed.Load() + c.denied.Load() + c.errored.Load() + hits + failClosed,
		Requests:       c.x.Sent.Load(),
		Retries:        c.retries.Load(),
		Coalesced:      c.coalesced.Load(),
		CacheHits:      cs.Hits,
		CacheMisses:    cs.Misses,
		CacheEvictions: cs.Evictions,
		CacheEntries:   entries,
		CacheBytes:     bytes,
		FailClosed:     failClosed,
		Breaker:        c.x.Breaker.Current(),
	}
	if c.replicas != nil {
		c.replicas.counts(c, &n)
	}
	return n
}

// counts reads the counters for the observable metrics: the decisions by
// outcome in the order of telemetry.Counts.Decisions.
func (c *Core) counts(n *telemetry.Counts) {
	cs, _, _ := c.cache.stats()
	n.Decisions = [4]int64{
		int64(c.allowed.Load() + c.hitAllowed.Load()),
		int64(c.denied.Load() + c.hitDenied.Load()),
		int64(c.errored.Load()),
		int64(c.failClosed.Load()),
	}
	n.CacheHits, n.CacheMisses, n.CacheEvictions = cs.Hits, cs.Misses, cs.Evictions
	n.Breaker = int64(c.x.Breaker.Current())
	if r := c.replicas; r != nil {
		n.Replicas, n.Invalidations, n.InvalidationGaps = true, r.received.Load(), r.gaps.Load()
	}
}

// ParseURL checks the URL of the client's server (an absolute http or
// https URL, optionally with a path, without user information, query or
// fragment) and returns it without a trailing slash. Its errors name the
// server as p does and never repeat the URL, which might hold secrets.
func ParseURL(raw string, p transport.Peer) (string, error) {
	what := p.Pkg() + ": the " + p.Server() + " URL"
	hint := "use an absolute http(s) URL such as https://" + strings.ToLower(p.Server()) + ".example.com"
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "", errors.New(what + " is empty; " + hint)
	case err != nil:
		return "", errors.New(what + " does not parse; " + hint)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%s has scheme %q; %s", what, u.Scheme, hint)
	case u.Host == "":
		return "", errors.New(what + " has no host; " + hint)
	case !ascii.Is(u.Host):
		// Hosts are compared in ASCII only (package ascii): a name that is
		// not is dialled as its A-label, which the credential's origin and
		// a DPoP proof's htu must name too.
		return "", errors.New(what + " has a host that is not ASCII; give an internationalised name in its A-label form (xn--...)")
	case u.User != nil:
		return "", errors.New(what + " must not hold user information; the token is the only credential sent")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errors.New(what + " must not have a query or fragment; " + hint)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Verdict is what one decision a client returns amounts to, for the
// counters.
type Verdict uint8

const (
	// Denied: the server denied.
	Denied Verdict = iota
	// Allowed: the server allowed.
	Allowed
	// Errored: the server could not evaluate (pep's ERROR); it never
	// allows, but is the server's answer, not a failure.
	Errored
	// FailedClosed: the client denied itself (the decision has a Cause).
	FailedClosed
)

// A Tally counts one call's decisions by verdict, for Record. The zero
// Tally is empty.
type Tally struct {
	n     [4]uint64
	first error // the Cause of the first decision that failed closed
}

// Add counts one decision; cause is its Cause when it failed closed.
func (t *Tally) Add(v Verdict, cause error) {
	t.n[v]++
	if v == FailedClosed && t.first == nil {
		t.first = cause
	}
}

// Record adds a call's tally to the counters and logs its fail-closed
// decisions: at Error, once per distinct cause, when the cause looks like
// a configuration mistake (the server answered 400 or 404: a client it
// does not know, a route it does not have), since every later call
// repeats it; at Warn otherwise.
func (c *Core) Record(t *Tally) {
	// A counter is written only when it changes: every cached call is
	// recorded, and an atomic add of zero still writes the counter's cell.
	if n := t.n[Denied]; n != 0 {
		c.denied.Add(n)
	}
	if n := t.n[Allowed]; n != 0 {
		c.allowed.Add(n)
	}
	if n := t.n[Errored]; n != 0 {
		c.errored.Add(n)
	}
	failed := t.n[FailedClosed]
	if failed == 0 {
		return
	}
	c.failClosed.Add(failed)
	var re *transport.ResponseError
	if errors.As(t.first, &re) && (re.StatusCode == http.StatusBadRequest || re.StatusCode == http.StatusNotFound) {
		c.logOnce(t.first)
		return
	}
	c.logger.Warn(c.who.Peer.Pkg()+": failing closed", c.who.Scope.Items, failed, "cause", t.first.Error())
}

// logOnce logs a configuration-shaped cause at Error the first time it is
// seen. The set of causes seen is bounded; when it fills, it starts over.
func (c *Core) logOnce(cause error) {
	text := cause.Error()
	c.seenMu.Lock()
	_, seen := c.seen[text]
	if !seen {
		if c.seen == nil || len(c.seen) >= maxSeenCauses {
			c.seen = make(map[string]struct{})
		}
		c.seen[text] = struct{}{}
	}
	c.seenMu.Unlock()
	if !seen {
		c.logger.Error(c.who.Peer.Pkg()+": the "+c.who.Peer.Server()+" refuses this client's requests; "+c.who.Misconfigured, "cause", text)
	}
}

// maxSeenCauses bounds the configuration-shaped causes logOnce remembers.
const maxSeenCauses = 64

// CountCall counts a public call (one not answered from the cache whole
// by Hit).
func (c *Core) CountCall() { c.calls.Add(1) }

// FailAll counts n decisions the client denied itself without asking the
// server (a refused call), which are not logged.
func (c *Core) FailAll(n int) { c.failClosed.Add(uint64(n)) }
