package pep

import (
	"errors"
	"strconv"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// Status is the gateway's verdict on one resource-scope pair. The zero value
// is [Deny], so a Status that was never set never grants.
type Status uint8

const (
	// Deny means the caller may not use the scope (or the client failed
	// closed; see Decision.Cause).
	Deny Status = iota
	// Grant means the gateway explicitly allowed the pair.
	Grant
	// Error means the gateway could not evaluate the pair, e.g. the
	// resource or scope is not defined on the client. It never allows.
	Error
)

// String returns "GRANT", "DENY" or "ERROR", the strings of the wire format,
// and "Status(n)" for any other value.
func (s Status) String() string {
	switch s {
	case Grant:
		return "GRANT"
	case Deny:
		return "DENY"
	case Error:
		return "ERROR"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Decision is the answer for one resource-scope pair.
type Decision struct {
	Resource string
	Scope    string
	// Status is the gateway's answer, or Deny when the client failed closed.
	Status Status
	// Cached reports that the answer came from the client's cache.
	Cached bool
	// Cause says why the pair is not allowed when the gateway's answer
	// alone does not: the client failed closed (errors.Is(Cause,
	// ErrUnavailable) for transport failures, timeouts and an open circuit
	// breaker; a *ResponseError for unusable gateway answers) or the call
	// also returned an error (no token, 401, a caller mistake), and Status
	// is then Deny; or the gateway answered ERROR, and Cause is
	// ErrNotEvaluated. It is nil for the gateway's GRANT and DENY.
	Cause error
}

// Allowed reports whether the gateway explicitly granted the pair. It is
// false for Deny, for Error and whenever Cause is set.
func (d Decision) Allowed() bool {
	return d.Status == Grant && d.Cause == nil
}

// Result is the answer for several pairs.
type Result struct {
	// Status is computed by the client: Deny if any pair is denied
	// (including a fail-closed pair), otherwise Error if any pair is Error,
	// otherwise Grant. A Result without decisions is Deny.
	Status Status
	// Decisions holds one decision per requested pair, in request order
	// with duplicates removed.
	Decisions []Decision
}

// Allowed reports whether every requested pair was granted. It is false for
// an empty Result.
func (r Result) Allowed() bool {
	if r.Status != Grant || len(r.Decisions) == 0 {
		return false
	}
	for _, d := range r.Decisions {
		if !d.Allowed() {
			return false
		}
	}
	return true
}

// overall computes Result.Status from per-pair decisions (fail-closed rule 6).
func overall(ds []Decision) Status {
	if len(ds) == 0 {
		return Deny
	}
	sawError := false
	for _, d := range ds {
		switch {
		case d.Status == Error:
			sawError = true
		case d.Status != Grant || d.Cause != nil:
			return Deny
		}
	}
	if sawError {
		return Error
	}
	return Grant
}

// outcomeOf names the outcome of a call's decisions for its span: the
// overall status, or fail_closed when any pair failed closed.
func outcomeOf(ds []Decision) string {
	for _, d := range ds {
		if d.Cause != nil && !errors.Is(d.Cause, ErrNotEvaluated) {
			return "fail_closed"
		}
	}
	switch overall(ds) {
	case Grant:
		return "grant"
	case Error:
		return "error"
	}
	return "deny"
}

// Resource names a resource and the scopes asked for on it.
type Resource struct {
	Name string
	// Scopes lists the scopes to check. For ListGranted an empty list means
	// every scope defined on the resource, and the Name "*" every resource
	// of the client; CheckMany needs at least one scope per resource.
	Scopes []string
}

// Permission is one pair listed by ListGranted; its Status is always Grant.
type Permission struct {
	Resource string
	Scope    string
	Status   Status
}

// RequestContext describes the request being authorized; it is sent to the
// gateway as the decision's context attributes, where policies can use it
// (for example to allow a scope only for some HTTP methods). Different
// request contexts never share cached decisions.
type RequestContext struct {
	Method string
	Path   string
	// Headers are sent as one string, their JSON object with sorted keys
	// ({"X-Tenant":"eu"}): the service's context attributes are strings.
	Headers map[string]string
	Body    string
}

// CallOption adjusts one Check, CheckMany or ListGranted call.
type CallOption interface {
	applyCall(*callConfig)
}

type callConfig struct {
	reqCtx  *RequestContext
	noCache bool
}

type callOptionFunc func(*callConfig)

func (f callOptionFunc) applyCall(c *callConfig) { f(c) }

// WithRequestContext sends rc as the decision context of the call. The
// client copies rc; it does not keep or change the caller's map.
func WithRequestContext(rc RequestContext) CallOption {
	if rc.Headers != nil {
		h := make(map[string]string, len(rc.Headers))
		for k, v := range rc.Headers {
			h[k] = v
		}
		rc.Headers = h
	}
	return callOptionFunc(func(c *callConfig) { c.reqCtx = &rc })
}

// NoCache makes the call ask the gateway even for pairs the cache holds.
// The fresh answers are still stored for later calls.
func NoCache() CallOption {
	return callOptionFunc(func(c *callConfig) { c.noCache = true })
}

// applyCallOptions is kept out of the callers so that a call without options
// does not allocate.
func applyCallOptions(opts []CallOption) callConfig {
	var cc callConfig
	for _, o := range opts {
		if o != nil {
			o.applyCall(&cc)
		}
	}
	return cc
}

// BreakerState is the state of the client's circuit breaker, reported by
// Stats: BreakerClosed (the zero value, also what a client without a
// breaker reports), BreakerOpen or BreakerHalfOpen; its String is
// "closed", "open" or "half-open". It is one type with
// authzen.BreakerState.
type BreakerState = transport.BreakerState

// The breaker's states.
const (
	// BreakerClosed: requests go to the gateway.
	BreakerClosed = transport.BreakerClosed
	// BreakerOpen: requests are denied at once with ErrCircuitOpen.
	BreakerOpen = transport.BreakerOpen
	// BreakerHalfOpen: the cool-down is over; the next request is a probe
	// (or one is under way) whose outcome closes or reopens the breaker.
	BreakerHalfOpen = transport.BreakerHalfOpen
)
