package core

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/events"
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
	if s.RetryMax < 0 {
		add("WithRetry: max must be 0 (no retries) or more, got %d", s.RetryMax)
	}
	if s.RetryMax > 0 {
		if s.RetryMinWait <= 0 {
			add("WithRetry: minWait must be positive when retrying, got %v", s.RetryMinWait)
		}
		if s.RetryMaxWait < s.RetryMinWait {
			add("WithRetry: maxWait (%v) must be at least minWait (%v)", s.RetryMaxWait, s.RetryMinWait)
		}
	}
	if s.Timeout <= 0 {
		add("WithTimeout: the timeout must be positive, got %v", s.Timeout)
	}
	if s.CacheSize < 0 {
		add("WithCache: size must be 0 (no cache) or more, got %d", s.CacheSize)
	}
	if s.CacheMaxBytes <= 0 {
		add("WithCacheMaxBytes: the byte bound must be positive, got %d", s.CacheMaxBytes)
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
