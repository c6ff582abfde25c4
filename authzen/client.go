package authzen

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

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/telemetry"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// Client asks an AuthZEN PDP for access decisions and fails closed. It is
// safe for concurrent use. Its configuration is fixed by New; only the
// PEP's credential changes afterwards (SetToken, SetDPoPToken,
// ClearToken).
type Client struct {
	pdpURL string // without a trailing slash

	// endpoints are the PDP's, from WithEndpoints or discovery; nil until
	// discovery succeeded. discovering holds a token while a discovery
	// runs: one at a time, and a waiter can give up.
	endpoints   atomic.Pointer[Endpoints]
	discovering chan struct{}

	x         *transport.Exchanger
	timeout   time.Duration
	batchSize int
	maxToken  int // WithMaxTokenBytes
	flights   transport.Flights[flightKey, []item]
	cache     *decisionCache
	logger    *slog.Logger
	emitter   *events.Emitter
	now       func() time.Time

	token   atomic.Pointer[tokenState]
	tokenMu sync.Mutex

	tel *telemetry.Telemetry

	calls, evaluations, failClosed, coalesced, retries atomic.Uint64
	// allowed and denied count the decisions without a Cause, by verdict.
	allowed, denied atomic.Uint64
}

// tokenState is the client's current credential; a new one per SetToken.
type tokenState struct {
	// cred is released (before the purge) when the credential is replaced
	// or cleared, which stops the calls still using it (ErrTokenChanged).
	cred *transport.Held
	// expired is set, under tokenMu, by the first 401 for this credential.
	expired bool
}

// New returns a client for the PDP at pdpURL (an absolute http or https
// URL, the PDP identifier of the AuthZEN metadata). Unless WithEndpoints
// is given, the endpoints are read from the PDP's
// /.well-known/authzen-configuration on the first call (or by Discover).
// New applies the defaults, then opts, and validates the result once.
func New(pdpURL string, opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	base, err := parseURL(pdpURL)
	errs := []error{err, cfg.validate()}
	var ep *Endpoints
	if cfg.endpoints != nil {
		e, err := cfg.endpoints.resolve(base)
		errs = append(errs, err)
		ep = &e
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	c := &Client{pdpURL: base, timeout: cfg.timeout, batchSize: cfg.batchSize, maxToken: cfg.maxTokenBytes, logger: logger, now: cfg.now,
		discovering: make(chan struct{}, 1)}
	c.endpoints.Store(ep)
	c.x = &transport.Exchanger{Peer: pdp, Base: cfg.httpClient.Transport, Logger: logger}
	if c.x.Base == nil {
		c.x.Base, c.x.OwnsBase = transport.NewDefaultTransport(), true
	}
	c.x.Retry = transport.RetryPolicy{
		Max: cfg.retryMax, MinWait: cfg.retryMin, MaxWait: cfg.retryMx,
		AttemptTimeout: cfg.httpClient.Timeout, Logger: logger, Retries: &c.retries, Peer: pdp,
	}
	c.x.Breaker = transport.NewBreaker(cfg.breakerFailures, cfg.breakerCoolDown, cfg.now, func(from, to BreakerState) {
		logger.Warn("authzen: circuit breaker changed", "from", from.String(), "to", to.String())
	})
	if c.cache, err = newDecisionCache(cfg.cacheSize, cfg.cacheBytes, cfg.allowTTL, cfg.denyTTL); err != nil {
		return nil, fmt.Errorf("authzen: WithCache: %w", err)
	}
	c.emitter = events.NewEmitter(func(ev events.Event, recovered any) {
		logger.Error("authzen: event handler panicked", "event", ev.Kind.String(), "panic", fmt.Sprint(recovered))
	})
	for _, h := range cfg.handlers {
		c.emitter.Subscribe(h)
	}
	if c.tel, err = telemetry.New(instrumentation, c, (*Client).counts, cfg.tracerProvider, cfg.meterProvider, c.pdpURL); err != nil {
		return nil, fmt.Errorf("authzen: setting up telemetry: %w", err)
	}
	c.x.Observe = c.tel
	return c, nil
}

// parseURL checks a PDP URL and returns it without a trailing slash. The
// error does not repeat the URL.
func parseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "" || err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return "", errors.New("authzen: the PDP URL must be an absolute http(s) URL such as https://pdp.example.com")
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errors.New("authzen: the PDP URL must not hold user information, a query or a fragment")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// resolve makes every endpoint absolute against base.
func (e Endpoints) resolve(base string) (Endpoints, error) {
	var errs []error
	fix := func(name string, p *string) {
		switch {
		case *p == "":
		case strings.HasPrefix(*p, "/"):
			*p = base + *p
		default:
			if _, err := parseURL(*p); err != nil {
				errs = append(errs, fmt.Errorf("authzen: the %s endpoint must be a path starting with / or an absolute http(s) URL", name))
			}
		}
	}
	fix("evaluation", &e.Evaluation)
	fix("evaluations", &e.Evaluations)
	fix("subject search", &e.SearchSubject)
	fix("resource search", &e.SearchResource)
	fix("action search", &e.SearchAction)
	return e, errors.Join(errs...)
}

// SetToken makes token the Bearer token the PEP sends to the PDP. It purges
// the previous credential's cached decisions and emits tokenSet; calls
// still under way with the previous credential fail closed at their next
// step (ErrTokenChanged). SetToken("") is ClearToken().
func (c *Client) SetToken(token string) {
	if token == "" {
		c.ClearToken()
		return
	}
	c.setCredential(transport.NewBearer(token))
}

// SetDPoPToken makes token a DPoP-bound token (RFC 9449) bound to signer's
// key: every attempt carries a fresh proof and the PDP's latest DPoP-Nonce.
// Otherwise as SetToken; a nil signer makes calls fail with ErrNoToken.
//
// A key that is not held in memory (signer.InMemory false: a KMS, an HSM)
// signs under the call's context: a call waits for it only until its
// deadline and is then denied with a Cause matching ErrUnavailable and
// context.DeadlineExceeded, nothing sent and the breaker not counting it.
// A key makes at most 16 signatures at once (a call waits for a slot only
// until its deadline); one whose every slot has been taken for over 10 s
// is taken as hung: calls fail at once (ErrUnavailable) until one returns.
func (c *Client) SetDPoPToken(token string, signer *dpop.Signer) {
	if token == "" {
		c.ClearToken()
		return
	}
	c.setCredential(transport.NewDPoP(token, signer))
}

func (c *Client) setCredential(cred transport.Credential) {
	c.tokenMu.Lock()
	old := c.token.Swap(&tokenState{cred: transport.Hold(cred)})
	c.enqueue(events.TokenSet, cred.Ident().Scheme)
	c.tokenMu.Unlock()
	if old != nil {
		c.forget(old)
	}
	c.emitter.Deliver(context.Background())
}

// forget drops a credential that is no longer the client's: the calls
// still using it stop (ErrTokenChanged), then its cached decisions go. The
// release comes first: the purge fences the cache writers of requests made
// before it, and the release stops the requests made after it.
func (c *Client) forget(old *tokenState) {
	old.cred.Release()
	c.cache.purge(old.cred.Ident())
}

// ClearToken removes the credential, purges its cached decisions and emits
// tokenCleared; calls under way with it fail closed (ErrTokenChanged), and
// later calls fail with ErrNoToken.
func (c *Client) ClearToken() {
	c.tokenMu.Lock()
	old := c.token.Swap(nil)
	if old != nil {
		c.enqueue(events.TokenCleared, old.cred.Ident().Scheme)
	}
	c.tokenMu.Unlock()
	if old != nil {
		c.forget(old)
		c.emitter.Deliver(context.Background())
	}
}

// Close releases the client's connections: every call made after it
// (Evaluate, Evaluations, the searches, Discover) fails with ErrClosed
// without sending anything; calls under way finish, and their connections
// are closed as they end. Close does not wait for them. It closes only the
// connections of the transport New made; one given with WithHTTPClient is
// the caller's to close. It always returns nil; calling it again does
// nothing more.
func (c *Client) Close() error {
	c.x.Close()
	return nil
}

// Subscribe adds h to the handlers of the client's token lifecycle events
// and returns a function that removes it (see pep.Client.Subscribe for the
// delivery rules, which are the same).
func (c *Client) Subscribe(h events.Handler) (unsubscribe func()) { return c.emitter.Subscribe(h) }

func (c *Client) enqueue(kind events.Kind, s transport.Scheme) {
	c.emitter.Enqueue(events.Event{Kind: kind, Time: c.now(), TokenType: s.String()})
}

// refused handles a 401 for st's credential: its cached decisions go and,
// if it is still the client's credential, tokenExpired is emitted once. A
// 401 that blames the DPoP proof or still owes a nonce is no verdict on the
// token.
func (c *Client) refused(ctx context.Context, st *tokenState, err error) {
	var re *ResponseError
	if !errors.As(err, &re) || !errors.Is(re, ErrUnauthorized) || transport.NonceOwed(re) {
		return
	}
	c.cache.purge(st.cred.Ident())
	c.tokenMu.Lock()
	current := c.token.Load() == st && !st.expired
	if current {
		st.expired = true
		c.emitter.Enqueue(events.Event{Kind: events.TokenExpired, Time: c.now(), TokenType: st.cred.Ident().Scheme.String(), Err: re})
	}
	c.tokenMu.Unlock()
	if current {
		c.emitter.Deliver(ctx)
	}
}

// credential returns the client's credential, or why there is none usable
// (ErrClosed after Close).
func (c *Client) credential() (*tokenState, error) {
	if c.x.Closed() {
		return nil, ErrClosed
	}
	st := c.token.Load()
	if st == nil {
		return nil, fmt.Errorf("%w: call SetToken or SetDPoPToken", ErrNoToken)
	}
	if err := transport.CheckToken(st.cred.Ident().Token, c.maxToken); err != nil {
		return nil, err
	}
	if err := st.cred.Usable(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoToken, err)
	}
	return st, nil
}

// bound returns ctx limited by the client's timeout, and whether that
// timeout rather than the caller's deadline is the call's.
func (c *Client) bound(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	deadline, has := ctx.Deadline()
	own := !has || time.Until(deadline) >= c.timeout
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	return ctx, cancel, own
}

// Stats is a snapshot of a client's counters.
type Stats struct {
	// Calls counts Evaluate, Evaluations and search calls.
	Calls uint64
	// Evaluations counts the decisions returned.
	Evaluations uint64
	// PDPRequests counts HTTP requests sent to the PDP, retries included.
	PDPRequests uint64
	// Retries counts the requests that were retries.
	Retries uint64
	// Coalesced counts calls that shared an identical call's request.
	Coalesced uint64
	// CacheHits and CacheMisses count cache lookups, one per evaluation.
	CacheHits, CacheMisses uint64
	// CacheEntries is the number of decisions cached now.
	CacheEntries int
	// FailClosed counts decisions the client denied itself (non-nil Cause).
	FailClosed uint64
	// Breaker is the circuit breaker's state now.
	Breaker BreakerState
}

// Stats returns the client's counters; cheap and safe at any time.
func (c *Client) Stats() Stats {
	cs, n := c.cache.stats()
	return Stats{
		Calls: c.calls.Load(), Evaluations: c.evaluations.Load(), PDPRequests: c.x.Sent.Load(),
		Retries: c.retries.Load(), Coalesced: c.coalesced.Load(), CacheHits: cs.Hits, CacheMisses: cs.Misses,
		CacheEntries: n, FailClosed: c.failClosed.Load(), Breaker: c.x.Breaker.Current(),
	}
}
