package core

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/transport"
	"github.com/orgauthz/orgauthz/invalidation"
)

// The defaults both clients apply, so that pep and authzen behave alike
// out of the box. The batch size is each client's own.
const (
	DefaultTimeout         = 2 * time.Second
	DefaultRetryMax        = 2
	DefaultRetryMinWait    = 25 * time.Millisecond
	DefaultRetryMaxWait    = 400 * time.Millisecond
	DefaultCacheSize       = 10_000
	DefaultCacheMaxBytes   = 32 << 20
	DefaultAllowTTL        = 30 * time.Second
	DefaultDenyTTL         = 10 * time.Second
	DefaultBreakerFailures = 5
	DefaultBreakerCoolDown = 5 * time.Second
	// DefaultMaxTokenBytes bounds the token a client sends: a real JWT,
	// DPoP-bound or not, is a few KiB at most.
	DefaultMaxTokenBytes = 16 << 10
)

// The ranges of the numeric settings that have bounds beyond their sign,
// so that every value keeps its feature meaningful and the load it makes
// bounded.
const (
	// MaxRetries bounds WithRetry's max: with the default 2, and a deadline
	// that rarely fits more, a larger number adds only load on a gateway
	// already failing (each retry counts once in the breaker, after them).
	MaxRetries = 10
	// MinRetryWait bounds WithRetry's minWait when retrying, so that the
	// retries of one call are spread out rather than sent back to back.
	MinRetryWait = time.Millisecond
	// MaxCacheSize bounds WithCache's size: the cache's own limit.
	MaxCacheSize = cache.MaxEntries
	// MaxCachedKey bounds the key of a cached decision below its token,
	// for both clients: pep's is at most 4+512+512 bytes (the pair's
	// lengths, the pair and the request context or its digest), authzen's
	// at most 512.
	MaxCachedKey = 4 + 512 + 512
)

// MinCacheMaxBytes is the least WithCacheMaxBytes: what one decision of
// the longest token and key the cache keeps (MaxCachedToken, MaxCachedKey)
// counts, by the cache's own accounting; a smaller bound would keep no
// such decision, and the cache would ask the gateway on every call.
var MinCacheMaxBytes = cache.Footprint[transport.Ident, string, bool](
	transport.Ident{Scheme: transport.SchemeDPoP, Token: strings.Repeat("t", MaxCachedToken)},
	strings.Repeat("k", MaxCachedKey), 0)

// Settings are what a client's options set. A client's New starts from
// Defaults, applies its options in order (a later one wins), and Init
// validates the result once.
type Settings struct {
	HTTPClient *http.Client

	RetryMax                   int
	RetryMinWait, RetryMaxWait time.Duration

	Timeout time.Duration

	CacheSize         int
	CacheMaxBytes     int64
	AllowTTL, DenyTTL time.Duration

	BatchSize     int
	MaxTokenBytes int

	Logger   *slog.Logger
	Handlers []events.Handler

	BreakerFailures int
	BreakerCoolDown time.Duration

	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider

	// Invalidator carries purges between replicas (WithInvalidator); nil
	// for none.
	Invalidator invalidation.Invalidator

	// Test seams, set only by the clients' tests. A nil Now is the real
	// clock; FlightWait runs each time a caller starts waiting for a
	// request (Flights.WaitHook).
	Now        func() time.Time
	FlightWait func()
}

// Defaults returns the default settings with a batch size of batch.
func Defaults(batch int) Settings {
	return Settings{
		HTTPClient:      &http.Client{},
		RetryMax:        DefaultRetryMax,
		RetryMinWait:    DefaultRetryMinWait,
		RetryMaxWait:    DefaultRetryMaxWait,
		Timeout:         DefaultTimeout,
		CacheSize:       DefaultCacheSize,
		CacheMaxBytes:   DefaultCacheMaxBytes,
		AllowTTL:        DefaultAllowTTL,
		DenyTTL:         DefaultDenyTTL,
		BatchSize:       batch,
		MaxTokenBytes:   DefaultMaxTokenBytes,
		BreakerFailures: DefaultBreakerFailures,
		BreakerCoolDown: DefaultBreakerCoolDown,
	}
}

// Validate reports every invalid setting at once, each error prefixed with
// pkg and naming the option to fix.
func (s *Settings) Validate(pkg string) error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(pkg+": "+format, args...))
	}
	if s.HTTPClient == nil {
		add("WithHTTPClient: the *http.Client is nil; omit the option to use the default")
	}
	if s.RetryMax < 0 || s.RetryMax > MaxRetries {
		add("WithRetry: max must be from 0 (no retries) to %d, got %d", MaxRetries, s.RetryMax)
	}
	if s.RetryMax > 0 {
		if s.RetryMinWait < MinRetryWait {
			add("WithRetry: minWait must be at least %v when retrying, got %v", MinRetryWait, s.RetryMinWait)
		}
		if s.RetryMaxWait < s.RetryMinWait {
			add("WithRetry: maxWait (%v) must be at least minWait (%v)", s.RetryMaxWait, s.RetryMinWait)
		}
	}
	if s.Timeout <= 0 {
		add("WithTimeout: the timeout must be positive, got %v", s.Timeout)
	}
	if s.CacheSize < 0 || s.CacheSize > MaxCacheSize {
		add("WithCache: size must be from 0 (no cache) to %d entries, got %d", MaxCacheSize, s.CacheSize)
	}
	if s.CacheMaxBytes < MinCacheMaxBytes {
		add("WithCacheMaxBytes: the byte bound must be at least %d (one decision of the longest token and key the cache keeps), got %d", MinCacheMaxBytes, s.CacheMaxBytes)
	}
	if s.AllowTTL < 0 || s.DenyTTL < 0 {
		add("WithCache: TTLs must not be negative, got %v and %v", s.AllowTTL, s.DenyTTL)
	}
	if s.BatchSize <= 0 {
		add("WithBatchSize: the batch size must be positive, got %d", s.BatchSize)
	}
	if s.MaxTokenBytes <= 0 {
		add("WithMaxTokenBytes: the bound must be positive, got %d", s.MaxTokenBytes)
	}
	if slices.ContainsFunc(s.Handlers, func(h events.Handler) bool { return h == nil }) {
		add("WithEventHandler: the handler is nil")
	}
	if s.BreakerFailures < 0 {
		add("WithBreaker: failures must be 0 (no breaker) or more, got %d", s.BreakerFailures)
	}
	if s.BreakerFailures > 0 && s.BreakerCoolDown <= 0 {
		add("WithBreaker: coolDown must be positive, got %v", s.BreakerCoolDown)
	}
	return errors.Join(errs...)
}
