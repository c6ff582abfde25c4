package authzen

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/transport"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Defaults applied by New before the options (internal/transport's,
// shared by pep and authzen).
const (
	DefaultTimeout         = transport.DefaultTimeout
	DefaultRetryMax        = transport.DefaultRetryMax
	DefaultRetryMinWait    = transport.DefaultRetryMinWait
	DefaultRetryMaxWait    = transport.DefaultRetryMaxWait
	DefaultCacheSize       = transport.DefaultCacheSize
	DefaultCacheMaxBytes   = transport.DefaultCacheMaxBytes
	DefaultAllowTTL        = transport.DefaultAllowTTL
	DefaultDenyTTL         = transport.DefaultDenyTTL
	DefaultBatchSize       = 50 // OpenFGA's limit; the spec sets none
	DefaultBreakerFailures = transport.DefaultBreakerFailures
	DefaultBreakerCoolDown = transport.DefaultBreakerCoolDown
	DefaultMaxTokenBytes   = transport.DefaultMaxTokenBytes
)

// Option configures a Client in New. Options are applied in order (a later
// one wins) and the result is validated once.
type Option func(*config)

type config struct {
	httpClient        *http.Client
	endpoints         *Endpoints
	retryMax          int
	retryMin, retryMx time.Duration
	timeout           time.Duration
	cacheSize         int
	cacheBytes        int64
	allowTTL, denyTTL time.Duration
	batchSize         int
	maxTokenBytes     int
	logger            *slog.Logger
	handlers          []events.Handler
	breakerFailures   int
	breakerCoolDown   time.Duration
	now               func() time.Time
	tracerProvider    trace.TracerProvider
	meterProvider     metric.MeterProvider
}

func defaultConfig() config {
	return config{
		httpClient: &http.Client{}, retryMax: DefaultRetryMax, retryMin: DefaultRetryMinWait,
		retryMx: DefaultRetryMaxWait, timeout: DefaultTimeout, cacheSize: DefaultCacheSize,
		cacheBytes: DefaultCacheMaxBytes, allowTTL: DefaultAllowTTL, denyTTL: DefaultDenyTTL,
		batchSize: DefaultBatchSize, maxTokenBytes: DefaultMaxTokenBytes, breakerFailures: DefaultBreakerFailures,
		breakerCoolDown: DefaultBreakerCoolDown,
	}
}

// Endpoints are the PDP's API endpoints: absolute URLs, or paths that
// start with "/" and are resolved against the PDP URL given to New. An
// empty endpoint is an API the client does not call (a call that needs it
// fails closed).
type Endpoints struct {
	Evaluation, Evaluations                     string
	SearchSubject, SearchResource, SearchAction string
}

// WithEndpoints gives the PDP's endpoints instead of reading them from its
// /.well-known/authzen-configuration (OpenFGA serves them under
// /stores/{store_id}/access/v1/ and its metadata elsewhere).
func WithEndpoints(e Endpoints) Option { return func(c *config) { c.endpoints = &e } }

// WithHTTPClient makes the client send through hc's Transport (and bound
// each attempt by hc.Timeout). hc is not modified; its redirect policy and
// cookie jar are not used: redirects deny and cookies are never kept.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithRetry sets the retries of connection errors, 429, 502, 503 and 504:
// at most max (0 disables), waiting from minWait doubling to maxWait.
func WithRetry(max int, minWait, maxWait time.Duration) Option {
	return func(c *config) { c.retryMax, c.retryMin, c.retryMx = max, minWait, maxWait }
}

// WithTimeout bounds a call whose context has no earlier deadline (default
// 2 s). A call's deadline, this one or its context's, is read on the clock
// when an answer is taken: an answer read after it (a process frozen
// meanwhile) is not used, and the call fails closed with ErrUnavailable.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithCache sets the decision cache: size entries (0 disables), the time a
// PDP true or false is kept, counted from when the request was sent (an
// answer is served only while the monotonic clock, read on every hit, says
// it is within that time). Only decisions without a response context are
// cached. Entries are per credential: two credentials never share one.
func WithCache(size int, allowTTL, denyTTL time.Duration) Option {
	return func(c *config) { c.cacheSize, c.allowTTL, c.denyTTL = size, allowTTL, denyTTL }
}

// WithBatchSize sets how many items one Access Evaluations request carries
// at most (default 50, OpenFGA's limit); larger batches are split.
func WithBatchSize(n int) Option { return func(c *config) { c.batchSize = n } }

// WithMaxTokenBytes bounds the token the client sends to n bytes: a longer
// one (SetToken, SetDPoPToken) makes calls fail with ErrNoToken without
// sending anything, so that it never reaches a front that resets
// connections on large headers and never counts against the breaker.
// Default 16 KiB. n must be positive.
func WithMaxTokenBytes(n int) Option { return func(c *config) { c.maxTokenBytes = n } }

// WithLogger sets the logger (default: none).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithEventHandler subscribes h to the client's token lifecycle events.
func WithEventHandler(h events.Handler) Option {
	return func(c *config) { c.handlers = append(c.handlers, h) }
}

// WithBreaker sets the circuit breaker: after failures consecutive
// failures (transport failures, timeouts, 502/503/504) the client fails
// closed for coolDown without calling the PDP. 0 disables it.
func WithBreaker(failures int, coolDown time.Duration) Option {
	return func(c *config) { c.breakerFailures, c.breakerCoolDown = failures, coolDown }
}

func (c *config) validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.httpClient == nil {
		add("authzen: WithHTTPClient: the client is nil")
	}
	if c.retryMax < 0 || c.retryMax > 0 && (c.retryMin <= 0 || c.retryMx < c.retryMin) {
		add("authzen: WithRetry: max must be 0 or more, and 0 < minWait <= maxWait")
	}
	if c.timeout <= 0 {
		add("authzen: WithTimeout: the timeout must be positive, got %v", c.timeout)
	}
	if c.cacheSize < 0 || c.cacheSize > 0 && (c.allowTTL <= 0 || c.denyTTL <= 0) {
		add("authzen: WithCache: size must be 0 (no cache) or more, and the TTLs positive")
	}
	if c.batchSize < 1 {
		add("authzen: WithBatchSize: the batch size must be at least 1, got %d", c.batchSize)
	}
	if c.maxTokenBytes <= 0 {
		add("authzen: WithMaxTokenBytes: the bound must be positive, got %d", c.maxTokenBytes)
	}
	if c.breakerFailures < 0 || c.breakerFailures > 0 && c.breakerCoolDown <= 0 {
		add("authzen: WithBreaker: failures must be 0 or more, and coolDown positive")
	}
	return errors.Join(errs...)
}
