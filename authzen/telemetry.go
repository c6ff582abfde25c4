package authzen

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/internal/telemetry"
)

// Telemetry (OpenTelemetry API only; the application installs the SDK),
// shared with pep through internal/telemetry:
//
// Spans: one per public call ("authzen.Evaluate", "authzen.Evaluations",
// "authzen.SearchSubject", "authzen.SearchResource",
// "authzen.SearchAction"), and under it one client span per PDP request
// ("POST"), whose W3C trace context is sent to the PDP. Attributes are
// low-cardinality: item counts (authzen.items, authzen.items.cached; for a
// search, the results), authzen.semantic, authzen.outcome, HTTP status,
// retries, breaker state. Never a token, a subject, a resource or an
// action.
//
// Metrics: authzen.decisions by authzen.outcome (allow, deny,
// fail_closed), authzen.cache.hits, authzen.cache.misses,
// authzen.cache.evictions and authzen.breaker.state, observed from the
// client's own counters when the metric reader collects; and the semantic
// conventions' http.client.request.duration and
// http.client.active_requests for every PDP request.

// instrumentation is the client's instrumentation scope (see
// internal/telemetry, which authzen shares with pep): its tracer and meter
// are named after the package, its own metrics and attributes start with
// "authzen." and a call counts items.
var instrumentation = telemetry.Scope{
	Name:     "github.com/orgauthz/orgauthz/authzen",
	Prefix:   "authzen.",
	Items:    "items",
	Outcomes: []string{"allow", "deny", "fail_closed"},
}

// attrSemantic is the evaluations semantic of an Evaluations call's span.
const attrSemantic = attribute.Key("authzen.semantic")

// counts reads the client's counters for its observable metrics, the
// decisions in the order of instrumentation.Outcomes.
func (c *Client) counts(n *telemetry.Counts) {
	cs, _ := c.cache.stats()
	n.Decisions[0] = int64(c.allowed.Load())
	n.Decisions[1] = int64(c.denied.Load())
	n.Decisions[2] = int64(c.failClosed.Load())
	n.CacheHits, n.CacheMisses, n.CacheEvictions = cs.Hits, cs.Misses, cs.Evictions
	n.Breaker = c.x.Breaker.Current()
}

// outcomeOf names the outcome of an evaluation call for its span:
// fail_closed when any decision failed closed (other than an item the PDP
// did not reach), deny when any was denied, allow otherwise.
func outcomeOf(ds []Decision) string {
	outcome := "allow"
	for _, d := range ds {
		switch {
		case d.Cause != nil && !errors.Is(d.Cause, ErrNotEvaluated):
			return "fail_closed"
		case !d.Allowed():
			outcome = "deny"
		}
	}
	return outcome
}

// WithTracerProvider makes the client trace with tp: a span per public
// call and a client span per PDP request, whose W3C trace context the PDP
// receives. The default, and a nil tp, is the global provider
// (otel.GetTracerProvider), which traces nothing until the application
// installs an SDK.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

// WithMeterProvider makes the client report metrics through mp: decisions
// by outcome, cache hits, misses and evictions, breaker state, and the
// HTTP client duration and active requests of its PDP requests. The
// default, and a nil mp, is the global provider (otel.GetMeterProvider),
// which measures nothing until the application installs an SDK. A client
// registers its observable instruments with mp once, in New.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meterProvider = mp }
}
