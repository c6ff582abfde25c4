package authzen

// Subject is the AuthZEN subject: who asks. Type and ID are required.
type Subject struct {
	Type       string
	ID         string
	Properties map[string]any
}

// Action is the AuthZEN action: what the subject wants to do. Name is
// required.
type Action struct {
	Name       string
	Properties map[string]any
}

// Resource is the AuthZEN resource: what the action is on. Type and ID are
// required.
type Resource struct {
	Type       string
	ID         string
	Properties map[string]any
}

// Request is one access evaluation: subject, action, resource and the
// environment's context. In Evaluations, an item's zero Subject, Action or
// Resource and nil Context are taken from the defaults.
type Request struct {
	Subject  Subject
	Action   Action
	Resource Resource
	Context  map[string]any
}

// Decision is the PDP's answer for one evaluation. The zero Decision does
// not allow.
type Decision struct {
	// allowed is the PDP's "decision": true, read strictly.
	allowed bool
	// Cause says why the evaluation is not allowed when the PDP's answer
	// alone does not: the client failed closed (errors.Is(Cause,
	// ErrUnavailable) for transport failures, timeouts and an open
	// breaker; a *ResponseError for unusable answers, the PDP's 4xx
	// included), the PDP reported an error for the item
	// (ErrEvaluationFailed), the item was not evaluated (ErrNotEvaluated)
	// or the call returned an error. Nil for the PDP's own true and false.
	Cause error
	// Context is the PDP's response context for the evaluation, if any
	// (reasons, an error object). It is shared with the cache: read it,
	// do not modify it.
	Context map[string]any
	// Cached reports that the answer came from the client's cache.
	Cached bool
}

// Allowed reports whether the PDP answered "decision": true for exactly
// this evaluation, in a 200 answer read completely and strictly, with no
// error in its context. It is false whenever Cause is set.
func (d Decision) Allowed() bool { return d.allowed && d.Cause == nil }

// Semantic is the evaluations_semantic of a batch (Evaluations).
type Semantic uint8

const (
	// ExecuteAll evaluates every item (the default).
	ExecuteAll Semantic = iota
	// DenyOnFirstDeny stops at the first item that is not allowed; the
	// items after it are denied with ErrNotEvaluated.
	DenyOnFirstDeny
	// PermitOnFirstPermit stops at the first allowed item; the items after
	// it are denied with ErrNotEvaluated.
	PermitOnFirstPermit
)

// String returns the wire name: "execute_all", "deny_on_first_deny" or
// "permit_on_first_permit".
func (s Semantic) String() string {
	switch s {
	case ExecuteAll:
		return "execute_all"
	case DenyOnFirstDeny:
		return "deny_on_first_deny"
	case PermitOnFirstPermit:
		return "permit_on_first_permit"
	}
	return "unknown"
}

// stops reports whether an item's outcome ends a batch under s.
func (s Semantic) stops(allowed bool) bool {
	return s == DenyOnFirstDeny && !allowed || s == PermitOnFirstPermit && allowed
}
