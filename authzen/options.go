package authzen

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
	DefaultAllowTTL        = core.DefaultAllowTTL
	DefaultDenyTTL         = core.DefaultDenyTTL
	DefaultBatchSize       = 50 // OpenFGA's limit; the spec sets none
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

// config is what the options set: the settings of internal/core and the
// PDP's endpoints.
type config struct {
	core.Settings
	endpoints    *Endpoints
	noCredential bool
}

type option func(*config)

func (f option) apply(c *config) { f(c) }

// Endpoints are the PDP's API endpoints: absolute URLs, or paths that
// start with "/" and are resolved against the PDP URL given to New;
// neither may hold a query or fragment (nor an absolute URL user
// information), as the PDP URL may not: New refuses them. An
// empty endpoint is an API the client does not call (a call that needs it
// fails closed).
type Endpoints struct {
	Evaluation, Evaluations                     string
	SearchSubject, SearchResource, SearchAction string
}

// WithEndpoints gives the PDP's endpoints instead of reading them from its
// /.well-known/authzen-configuration (OpenFGA serves them under
// /stores/{store_id}/access/v1/ and its metadata elsewhere).
func WithEndpoints(e Endpoints) Option { return option(func(c *config) { c.endpoints = &e }) }

// WithoutCredentials makes a client that sends no credential to the PDP:
// for a PDP that takes none, such as a sidecar on the loopback interface
// (Cerbos, OpenFGA without authentication). Without this option a client
// sends nothing until it is given a token (SetToken, SetDPoPToken): every
// call fails with ErrNoToken, so that a missing credential is never
// mistaken for a PDP that needs none. With it, calls are sent without an
// Authorization header from the start, and their decisions are cached as
// any credential's. Giving such a client a token (SetToken,
// SetDPoPToken, other than "") is a wiring mistake: every call from then
// on fails with an error matching ErrNoToken that says to drop one or the
// other, until ClearToken makes the client send none again. SetToken("")
// is ClearToken, as on every client. Such a client never emits a token
// lifecycle event: a 401 from its PDP is the call's error
// (ErrUnauthorized) and nothing more.
func WithoutCredentials() Option { return option(func(c *config) { c.noCredential = true }) }

// WithHTTPClient makes the client send its requests through hc's Transport
// (nil means the client's own copy of http.DefaultTransport, whose
// connections Close closes), bounding each attempt by hc's Timeout when it
// is set. Nothing else of hc is used: redirects are never followed (a 3xx
// denies) and cookies are never stored or sent. hc is never modified. A
// nil hc is an error. A panic of hc's Transport goes on on the calling
// goroutine, for a call sent in chunks too (once its other chunks have
// ended), and leaves nothing of the call held.
func WithHTTPClient(hc *http.Client) Option { return option(func(c *config) { c.HTTPClient = hc }) }

// WithRetry sets how often a failed PDP request is retried (max, 0
// disables retrying) and the bounds of the exponential backoff with jitter
// between attempts. Only connection errors and the statuses 429, 502, 503
// and 504 are retried; a Retry-After up to maxWait is waited out exactly.
// No retry starts when its wait would run past the call's deadline.
// Defaults: 2 retries, 25 ms to 400 ms. max must be from 0 to 10 (each
// retry adds load on a PDP already failing, and the breaker counts the
// call once, after them); when it is positive, minWait must be at least
// 1 ms and maxWait at least minWait.
func WithRetry(max int, minWait, maxWait time.Duration) Option {
	return option(func(c *config) { c.RetryMax, c.RetryMinWait, c.RetryMaxWait = max, minWait, maxWait })
}

// WithTimeout bounds every call whose context has no earlier deadline,
// retries included (default 2 s; it must be positive). A call's deadline,
// this one or its context's, is read on the clock when an answer is taken:
// an answer read after it (a process frozen meanwhile) is not used, and
// the call fails closed with ErrUnavailable.
func WithTimeout(d time.Duration) Option { return option(func(c *config) { c.Timeout = d }) }

// WithCache sets the decision cache: at most size entries (0 disables the
// cache), a PDP true kept for allowTTL and a false for denyTTL (a zero TTL
// keeps none of that kind), counted from when the request was sent: an
// answer is served only while the monotonic clock, read on every hit, says
// it is within its TTL. Only decisions without a response context are
// cached; every answer replaces what the cache held for its evaluation,
// and one not kept (a denial with reasons, an item's error) removes the
// older entry. Entries are per credential, two credentials never share one.
// Defaults: 10,000 entries, 30 s, 10 s. size must be from 0 to 2^31
// (2147483648); negative TTLs are errors.
func WithCache(size int, allowTTL, denyTTL time.Duration) Option {
	return option(func(c *config) { c.CacheSize, c.AllowTTL, c.DenyTTL = size, allowTTL, denyTTL })
}

// WithCacheMaxBytes bounds the memory of the decision cache to about n
// bytes, besides its entry count (WithCache). Each entry counts its
// evaluation's canonical JSON (a JSON longer than 512 bytes is kept as its
// SHA-256 digest), and each credential its own bytes once, however many
// entries it has, plus a fixed overhead of a few hundred bytes each, as
// the Go runtime rounds them; a credential longer than 8 KiB is never
// cached. Default 32 MiB. n must be at least what one decision of the
// longest cached credential and key counts (9,573 bytes on 64-bit
// platforms; New's error gives the exact figure): a smaller bound would
// keep nothing, and every call would ask the PDP.
func WithCacheMaxBytes(n int64) Option { return option(func(c *config) { c.CacheMaxBytes = n }) }

// WithBatchSize sets how many items one Access Evaluations request carries
// at most (default 50, OpenFGA's limit); larger batches are split into
// several requests. It must be positive.
func WithBatchSize(n int) Option { return option(func(c *config) { c.BatchSize = n }) }

// WithMaxTokenBytes bounds the token the client sends to n bytes: a longer
// one (SetToken, SetDPoPToken) makes calls fail with ErrNoToken without
// sending anything, so that it never reaches a front that resets
// connections on large headers and never counts against the breaker.
// Default 16 KiB. n must be positive.
func WithMaxTokenBytes(n int) Option { return option(func(c *config) { c.MaxTokenBytes = n }) }

// WithLogger makes the client log to l: requests and retries at Debug,
// fail-closed decisions and breaker changes at Warn, a PDP that refuses
// the client's requests as a whole (400, 404) and panicking event handlers
// at Error. Tokens are never logged. A nil l (and the default) logs
// nothing.
func WithLogger(l *slog.Logger) Option { return option(func(c *config) { c.Logger = l }) }

// WithEventHandler subscribes h to the client's token lifecycle events from
// the start (see Client.Subscribe). It may be given several times. A nil h
// is an error.
func WithEventHandler(h events.Handler) Option {
	return option(func(c *config) { c.Handlers = append(c.Handlers, h) })
}

// WithBreaker sets the circuit breaker: after failures consecutive failed
// PDP requests (transport failures, timeouts, 502, 503 and 504, counted
// after retries; never a denial or a 4xx) the client denies at once, with
// Cause ErrCircuitOpen and without calling the PDP, for coolDown; then one
// request is let through as a probe. Defaults: 5 failures, 5 s. failures 0
// disables the breaker; otherwise coolDown must be positive.
func WithBreaker(failures int, coolDown time.Duration) Option {
	return option(func(c *config) { c.BreakerFailures, c.BreakerCoolDown = failures, coolDown })
}

// WithTracerProvider makes the client trace with tp: a span per public
// call and a client span per PDP request, whose W3C trace context the PDP
// receives. The default, and a nil tp, is the global provider
// (otel.GetTracerProvider), which traces nothing until the application
// installs an SDK.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return option(func(c *config) { c.TracerProvider = tp })
}

// WithMeterProvider makes the client report metrics through mp: decisions
// by outcome, cache hits, misses and evictions, breaker state, and the
// HTTP client duration and active requests of its PDP requests. The
// default, and a nil mp, is the global provider (otel.GetMeterProvider),
// which measures nothing until the application installs an SDK. A client
// registers its observable instruments with mp once, in New.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return option(func(c *config) { c.MeterProvider = mp })
}
