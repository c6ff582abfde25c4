package pep

import (
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/core"
)

// Defaults applied by New before the options (internal/core's, shared
// by pep and authzen, but for the batch size).
const (
	DefaultTimeout         = core.DefaultTimeout
	DefaultRetryMax        = core.DefaultRetryMax
	DefaultRetryMinWait    = core.DefaultRetryMinWait
	DefaultRetryMaxWait    = core.DefaultRetryMaxWait
	DefaultCacheSize       = core.DefaultCacheSize
	DefaultCacheMaxBytes   = core.DefaultCacheMaxBytes
	DefaultGrantTTL        = core.DefaultAllowTTL
	DefaultDenyTTL         = core.DefaultDenyTTL
	DefaultBatchSize       = 100
	DefaultBreakerFailures = core.DefaultBreakerFailures
	DefaultBreakerCoolDown = core.DefaultBreakerCoolDown
	DefaultMaxTokenBytes   = core.DefaultMaxTokenBytes
)

// Option configures a Client in New. Options are applied in order (a later
// one wins) and the result is validated once; an invalid value makes New
// return an error that names the option.
type Option interface {
	apply(*config)
}

// config is what the options set: the settings of internal/core.
type config = core.Settings

type option func(*config)

func (f option) apply(c *config) { f(c) }

// WithHTTPClient makes the client send its requests through hc's Transport
// (nil means the client's default, see below), bounding each attempt by
// hc's Timeout when it is set. Nothing else of hc is used: redirects are
// never followed (a 3xx fails closed), and cookies are never stored or
// sent, so that one caller's gateway cookie cannot ride along with another
// caller's request. hc is never modified. A nil hc is an error. A panic of
// hc's Transport goes on on the calling goroutine, for a call sent in
// chunks too (once its other chunks have ended), and leaves nothing of the
// call held.
//
// Without this option the client uses its own copy of http.DefaultTransport
// (Close closes its connections), which keeps up to 16 idle connections per
// gateway, enough for the requests a
// CheckMany sends at once (Go's default keeps two); over HTTPS it speaks
// HTTP/2 when the gateway offers it, which carries those requests on one
// connection.
func WithHTTPClient(hc *http.Client) Option { return option(func(c *config) { c.HTTPClient = hc }) }

// WithRetry sets how often a failed gateway request is retried (max, 0
// disables retrying) and the bounds of the exponential backoff with jitter
// between attempts. Only connection errors and the statuses 429, 502, 503
// and 504 are retried. A Retry-After header (on 429 and 503) up to maxWait is
// waited out exactly; a longer one ends the retries. No retry starts when
// its wait would run past the call's deadline. Defaults: 2 retries, 25 ms to
// 400 ms. max must be from 0 to 10 (each retry adds load on a gateway
// already failing, and the breaker counts the call once, after them); when
// it is positive, minWait must be at least 1 ms and maxWait at least
// minWait.
func WithRetry(max int, minWait, maxWait time.Duration) Option {
	return option(func(c *config) { c.RetryMax, c.RetryMinWait, c.RetryMaxWait = max, minWait, maxWait })
}

// WithTimeout bounds every call whose context has no earlier deadline,
// retries included. Default 2 s. It must be positive. A call's deadline,
// this one or its context's, is read on the clock when an answer is taken:
// an answer read after it (a process frozen meanwhile) is not used (README
// rule 10).
func WithTimeout(d time.Duration) Option { return option(func(c *config) { c.Timeout = d }) }

// WithCache sets the decision cache: at most size entries (0 disables the
// cache), gateway GRANT answers kept for grantTTL and DENY answers for
// denyTTL (a zero TTL keeps none of that kind). A TTL counts from when the
// request was sent, and a cached answer is served only while the monotonic
// clock, read on every hit, says it is within it: no answer outlives its
// TTL, however slow its request or however long the process was frozen.
// ERROR answers and fail-closed denials are never cached, and every
// gateway answer replaces what the cache held for its pairs: one not kept
// (an ERROR, a pair a wildcard of ListGranted no longer lists) removes the
// older entry, so no older verdict is served in place of a newer answer.
// A ListGranted with a wildcard drops the token's cached decisions of the
// pairs it covers when its request is sent, and no others. Defaults: 10,000 entries, 30 s, 10 s. size must
// be from 0 to 2^31 (2147483648); negative TTLs are errors.
func WithCache(size int, grantTTL, denyTTL time.Duration) Option {
	return option(func(c *config) { c.CacheSize, c.AllowTTL, c.DenyTTL = size, grantTTL, denyTTL })
}

// WithCacheMaxBytes bounds the memory of the decision cache to about n
// bytes, besides its entry count (WithCache). Each entry counts its
// resource, scope and request context, and each token its own bytes once,
// however many entries it has, plus a fixed overhead of a few hundred
// bytes each, as the Go runtime rounds them. No caller chooses what one
// entry costs:
// a request context longer than 512 bytes is kept as its 32-byte SHA-256
// digest, and tokens longer than 8 KiB and pairs whose resource and scope
// exceed 512 bytes are never cached (each such call asks the gateway).
// Default 32 MiB. n must be at least what one decision of the longest
// cached token and key counts (9,573 bytes on 64-bit platforms; New's error
// gives the exact figure): a smaller bound would keep nothing, and every
// call would ask the gateway.
func WithCacheMaxBytes(n int64) Option { return option(func(c *config) { c.CacheMaxBytes = n }) }

// WithBatchSize sets how many resource-scope pairs go into one gateway
// request; CheckMany and ListGranted split larger calls into several
// requests sent in parallel (at most 4 at a time per call). Default 100,
// which is also the most resources the reference server accepts in one
// request. It must be positive.
func WithBatchSize(pairs int) Option { return option(func(c *config) { c.BatchSize = pairs }) }

// WithMaxTokenBytes bounds the tokens the client sends to n bytes: a
// token longer than that, the client's own (SetToken, SetDPoPToken) or a
// per-call one (WithToken), is refused with ErrNoToken, like a token an
// HTTP header cannot carry, and nothing is sent. So a caller's oversized
// token never reaches a front that resets connections on large headers,
// where its failures would count against the circuit breaker every caller
// shares. Default 16 KiB, several times a real JWT. n must be positive.
func WithMaxTokenBytes(n int) Option { return option(func(c *config) { c.MaxTokenBytes = n }) }

// WithLogger makes the client log to l: requests and retries at Debug,
// fail-closed decisions and breaker changes at Warn, panicking event
// handlers at Error. Tokens are never logged. A nil l (and the default) logs
// nothing.
func WithLogger(l *slog.Logger) Option { return option(func(c *config) { c.Logger = l }) }

// WithEventHandler subscribes h to the client's token lifecycle events from
// the start (see Client.Subscribe). It may be given several times. A nil h
// is an error.
func WithEventHandler(h events.Handler) Option {
	return option(func(c *config) { c.Handlers = append(c.Handlers, h) })
}

// WithBreaker sets the circuit breaker: after failures consecutive failed
// gateway requests (transport failures, timeouts and 5xx answers, counted
// after retries; never a DENY or a 4xx) the client denies at once, with
// Cause ErrCircuitOpen and without calling the gateway, for coolDown; then
// one request is let through as a probe, and its success closes the breaker
// while its failure opens it for another coolDown. Defaults: 5 failures, 5 s.
// failures 0 disables the breaker; otherwise coolDown must be positive.
func WithBreaker(failures int, coolDown time.Duration) Option {
	return option(func(c *config) { c.BreakerFailures, c.BreakerCoolDown = failures, coolDown })
}

// WithTracerProvider makes the client trace with tp: a span per public call
// that goes to the gateway and a client span per gateway request, whose W3C
// trace context the gateway receives (see the package documentation). The
// default, and a nil tp, is the global provider (otel.GetTracerProvider),
// which traces nothing until the application installs an SDK.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return option(func(c *config) { c.TracerProvider = tp })
}

// WithMeterProvider makes the client report metrics through mp: decisions
// by outcome, cache hits, misses and evictions, breaker state, and the
// HTTP client duration and active requests of its gateway requests. The
// default, and a nil mp, is the global provider (otel.GetMeterProvider),
// which measures nothing until the application installs an SDK. A client
// registers its observable instruments with mp once, in New.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return option(func(c *config) { c.MeterProvider = mp })
}
