package pep

import (
	"github.com/orgauthz/orgauthz/internal/telemetry"
)

// Telemetry (OpenTelemetry API only; the application installs the SDK):
//
// Spans: one per public call that goes to the gateway ("pep.Check",
// "pep.CheckMany", "pep.ListGranted", "pep.Organizations", "pep.Verify"),
// and under it one client span per gateway request ("POST"), whose W3C
// trace context is sent to the gateway. A call answered from the cache
// makes a span only inside a trace that is already being recorded, so the
// cached path consults no sampler and allocates nothing otherwise.
// Attributes are low-cardinality: realm, client, pair counts, outcome, HTTP
// status, retries, breaker state. Never a token; never a resource name.
//
// Metrics: pep.decisions by pep.outcome (grant, deny, error, fail_closed),
// pep.cache.hits, pep.cache.misses, pep.cache.evictions and
// pep.breaker.state, observed from the client's own counters when the
// metric reader collects (nothing is recorded on the call's path); and the
// semantic conventions' http.client.request.duration and
// http.client.active_requests for every gateway request.

// instrumentation is the client's instrumentation scope (see
// internal/telemetry, which pep shares with authzen): its tracer and meter
// are named after the package, its own metrics and attributes start with
// "pep." and a call counts pairs.
var instrumentation = telemetry.Scope{
	Name:     "github.com/orgauthz/orgauthz/pep",
	Prefix:   "pep.",
	Items:    "pairs",
	Outcomes: [4]string{"grant", "deny", "error", "fail_closed"},
}
