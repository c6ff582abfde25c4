package authzen

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"

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
// fail_closed; a batch item the PDP did not reach under its semantic,
// ErrNotEvaluated, is none of these), authzen.cache.hits, authzen.cache.misses,
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
	Outcomes: [4]string{"allow", "deny", "", "fail_closed"},
}

// attrSemantic is the evaluations semantic of an Evaluations call's span.
const attrSemantic = attribute.Key("authzen.semantic")

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
