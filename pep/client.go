package pep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/stripe"
	"github.com/orgauthz/orgauthz/internal/telemetry"
	"github.com/orgauthz/orgauthz/internal/transport"
	"go.opentelemetry.io/otel/attribute"
)

// Client asks the gateway for authorization decisions and fails closed. It
// is safe for concurrent use. Its configuration is fixed by New; only the
// token changes afterwards (SetToken, SetDPoPToken, ClearToken).
type Client struct {
	realm, clientID  string
	authorizeURL     string
	organizationsURL string
	gatewayURL       string // the gateway's base URL, without a trailing slash

	// x sends gateway requests: breaker, retries, credential, transport.
	x         *transport.Exchanger
	timeout   time.Duration
	batchSize int
	maxToken  int // WithMaxTokenBytes
	cache     *decisionCache
	flights   transport.Flights[flightKey, *answer]
	logger    *slog.Logger
	emitter   *events.Emitter
	now       func() time.Time

	// token is the client's current token, read without a lock by every
	// call. tokenMu orders its changes and the events that report them, so
	// that subscribers see the events in the order of the changes.
	token   atomic.Pointer[tokenState]
	tokenMu sync.Mutex

	// seen holds the configuration-shaped causes already logged (logOnce).
	seenMu sync.Mutex
	seen   map[string]struct{}

	tel *telemetry.Telemetry

	// Counters of Stats and of the metrics. Those every cached Check adds
	// to are striped, so that cores do not contend on one word. A Check
	// answered from the cache counts only in cachedGrants or cachedDenies,
	// which count both its call and its decision.
	calls, granted, denied, errored stripe.Counter
	cachedGrants, cachedDenies      stripe.Counter
	retries, coalesced, failClosed  atomic.Uint64
}

// New returns a client for the gateway at gatewayURL (an absolute http or
// https URL, optionally with a path prefix) that asks on behalf of the
// application clientID in realm. It applies the defaults, then opts, and
// validates the result once, returning an error that names every setting to
// fix. The client has no token until SetToken is called (or a per-call one
// is given with WithToken).
func New(gatewayURL, realm, clientID string, opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	base, urlErr := parseGatewayURL(gatewayURL)
	var errs []error
	if urlErr != nil {
		errs = append(errs, urlErr)
	}
	if strings.TrimSpace(realm) == "" {
		errs = append(errs, errors.New("pep: the realm is empty; pass the realm (tenant) name, e.g. \"acme\""))
	}
	if strings.TrimSpace(clientID) == "" {
		errs = append(errs, errors.New("pep: the client ID is empty; pass the clientId of the application whose resources are checked"))
	}
	if err := cfg.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	// The cache reads the real clock its own, cheaper way (the monotonic
	// clock alone, on every hit) unless a test gave the client a clock.
	cacheClock := cfg.now
	if cfg.now == nil {
		cfg.now = time.Now
	}
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		realm:     realm,
		clientID:  clientID,
		timeout:   cfg.timeout,
		batchSize: cfg.batchSize,
		maxToken:  cfg.maxTokenBytes,
		logger:    logger,
		now:       cfg.now,
		flights:   transport.Flights[flightKey, *answer]{WaitHook: cfg.flightWait},
	}
	prefix := base + "/realms/" + url.PathEscape(realm) + "/authorization-decision-provider"
	c.authorizeURL = prefix + "/authorize"
	c.organizationsURL = prefix + "/get-organizations"
	c.gatewayURL = base
	c.x = &transport.Exchanger{Peer: gateway, Base: cfg.httpClient.Transport, Logger: logger}
	if c.x.Base == nil {
		c.x.Base, c.x.OwnsBase = transport.NewDefaultTransport(), true
	}
	c.x.Retry = transport.RetryPolicy{
		Max: cfg.retryMax, MinWait: cfg.retryMin, MaxWait: cfg.retryMaxWait,
		AttemptTimeout: cfg.httpClient.Timeout, Logger: logger, Retries: &c.retries, Peer: gateway,
	}

	var err error
	if c.cache, err = newDecisionCache(cfg.cacheSize, cfg.cacheBytes, cfg.grantTTL, cfg.denyTTL, cacheClock); err != nil {
		return nil, fmt.Errorf("pep: WithCache: %w", err)
	}
	c.x.Breaker = transport.NewBreaker(cfg.breakerFailures, cfg.breakerCoolDown, cfg.now, func(from, to BreakerState) {
		logger.Warn("pep: circuit breaker changed", "from", from.String(), "to", to.String())
	})
	c.emitter = events.NewEmitter(func(ev events.Event, recovered any) {
		logger.Error("pep: event handler panicked", "event", ev.Kind.String(), "panic", fmt.Sprint(recovered))
	})
	for _, h := range cfg.handlers {
		c.emitter.Subscribe(h)
	}
	if c.tel, err = telemetry.New(instrumentation, c, (*Client).counts, cfg.tracerProvider, cfg.meterProvider, base,
		attribute.String("pep.realm", c.realm), attribute.String("pep.client", c.clientID)); err != nil {
		return nil, fmt.Errorf("pep: setting up telemetry: %w", err)
	}
	c.x.Observe = c.tel
	return c, nil
}

// parseGatewayURL checks the gateway URL and returns it without a trailing
// slash. Error messages do not repeat the URL, which might hold secrets.
func parseGatewayURL(raw string) (string, error) {
	const hint = "use an absolute http(s) URL such as https://gateway.example.com"
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "", errors.New("pep: the gateway URL is empty; " + hint)
	case err != nil:
		return "", errors.New("pep: the gateway URL does not parse; " + hint)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("pep: the gateway URL has scheme %q; %s", u.Scheme, hint)
	case u.Host == "":
		return "", errors.New("pep: the gateway URL has no host; " + hint)
	case u.User != nil:
		return "", errors.New("pep: the gateway URL must not hold user information; the token is the only credential sent")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errors.New("pep: the gateway URL must not have a query or fragment; " + hint)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// SetToken makes token the Bearer token of every later call that has no
// per-call token. It purges the cached decisions of the previous token and
// then emits tokenSet (after releasing the client's locks, so handlers may
// call back into the client). Calls still under way with the previous
// token fail closed at their next step (ErrTokenChanged): no retry goes
// out with it and no answer to it is used or cached. SetToken("") is
// ClearToken().
func (c *Client) SetToken(token string) {
	if token == "" {
		c.ClearToken()
		return
	}
	c.setCredential(transport.NewBearer(token))
}

func (c *Client) setCredential(cred credential) {
	st := &tokenState{cred: transport.Hold(cred), id: cred.Ident()}
	if st.unusable = transport.CheckToken(st.id.Token, c.maxToken); st.unusable == nil {
		st.group = c.cache.pin(st.id) // a token never sent has nothing to cache
	}
	c.tokenMu.Lock()
	old := c.token.Swap(st)
	c.enqueue(events.TokenSet, cred.Ident().Scheme, nil)
	c.tokenMu.Unlock()
	if old != nil {
		c.forget(old)
	}
	c.emitter.Deliver(context.Background())
}

// forget drops a token that is no longer the client's: the calls still
// using it stop (ErrTokenChanged), then its cached decisions and its pin on
// them go. The order matters: the purge fences the cache writers of
// requests made before it, and a request made after it is stopped by the
// release (transport.Held).
func (c *Client) forget(old *tokenState) {
	old.cred.Release()
	c.cache.purge(old.id)
	if old.group != nil {
		old.group.Unpin()
	}
}

// ClearToken removes the client's token, purges its cached decisions and
// emits tokenCleared. Calls still under way with it fail closed
// (ErrTokenChanged, as for SetToken); later calls without a per-call token
// fail with ErrNoToken. It does nothing, and emits nothing, when there is
// no token.
func (c *Client) ClearToken() {
	c.tokenMu.Lock()
	old := c.token.Swap(nil)
	if old != nil {
		c.enqueue(events.TokenCleared, old.id.Scheme, nil)
	}
	c.tokenMu.Unlock()
	if old == nil {
		return
	}
	c.forget(old)
	c.emitter.Deliver(context.Background())
}

// Close releases the client's connections. Every call made after it
// (Check, CheckMany, ListGranted, Organizations, Verify), cached answers
// included, fails with ErrClosed, with DENY decisions and nothing sent.
// Calls under way finish as they would have; their connections are closed
// as they end, so that once they have, the client keeps no connection and
// no goroutine (what goleak.VerifyTestMain checks). Close does not wait for
// them. It always returns nil; calling it again does nothing more.
//
// Close closes the connections of the client's own transport, the one New
// makes when WithHTTPClient is not given. A transport given with
// WithHTTPClient is the caller's: Close leaves its connections alone (close
// them with that *http.Client's CloseIdleConnections), and only stops the
// client from using it.
func (c *Client) Close() error {
	c.x.Close()
	return nil
}

// Subscribe adds h to the handlers of the client's token lifecycle events
// (tokenSet, tokenExpired, tokenCleared) and returns a function that removes
// it. Events are delivered one at a time, in the order the token changed,
// to every handler in subscription order, with no client lock held: a
// tokenExpired handler may call SetToken (its tokenSet is delivered after
// the tokenExpired has reached every handler). SetToken, SetDPoPToken and
// ClearToken return once their event is delivered, unless a delivery is
// already under way, which then delivers it. A call that caused
// tokenExpired waits for its delivery only until the call's deadline; a
// slower handler finishes on its own goroutine. A panicking handler is
// recovered and logged at Error.
func (c *Client) Subscribe(h events.Handler) (unsubscribe func()) {
	return c.emitter.Subscribe(h)
}

// enqueue queues an event for delivery; c.tokenMu must be held, so that
// events are queued in the order of the token changes they report.
func (c *Client) enqueue(kind events.Kind, s scheme, err error) {
	c.emitter.Enqueue(events.Event{Kind: kind, Time: c.now(), TokenType: s.String(), Err: err})
}

// Stats is a snapshot of a client's counters. Counters only grow.
type Stats struct {
	// Calls counts Check, CheckMany, ListGranted and Organizations calls.
	Calls uint64
	// GatewayRequests counts HTTP requests sent to the gateway, every
	// retry and DPoP nonce resend included.
	GatewayRequests uint64
	// Retries counts the requests that were retries of a failed one.
	Retries uint64
	// Coalesced counts the times a call shared a gateway request that an
	// identical concurrent call had already started, instead of sending
	// its own.
	Coalesced uint64
	// CacheHits and CacheMisses count cache lookups, one per pair.
	CacheHits, CacheMisses uint64
	// CacheEvictions counts live decisions pushed out of a full cache.
	CacheEvictions uint64
	// CacheEntries is the number of decisions cached now.
	CacheEntries int
	// CacheBytes is what the cached decisions count against the cache's
	// byte bound (WithCacheMaxBytes).
	CacheBytes int64
	// FailClosed counts decisions the client denied itself (those with a
	// non-nil Cause) instead of reporting a gateway answer.
	FailClosed uint64
	// Breaker is the circuit breaker's state now.
	Breaker BreakerState
}

// Stats returns the client's counters. It is cheap and safe to call at any
// time.
func (c *Client) Stats() Stats {
	cs, n, bytes := c.cache.stats()
	return Stats{
		Calls:           c.calls.Load() + c.cachedGrants.Load() + c.cachedDenies.Load(),
		GatewayRequests: c.x.Sent.Load(),
		Retries:         c.retries.Load(),
		Coalesced:       c.coalesced.Load(),
		CacheHits:       cs.Hits,
		CacheMisses:     cs.Misses,
		CacheEvictions:  cs.Evictions,
		CacheEntries:    n,
		CacheBytes:      bytes,
		FailClosed:      c.failClosed.Load(),
		Breaker:         c.x.Breaker.Current(),
	}
}
