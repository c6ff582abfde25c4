package pep

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"unicode/utf8"

	"github.com/orgauthz/orgauthz/internal/transport"
	"github.com/orgauthz/orgauthz/internal/verbatim"
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
	rc.Headers = maps.Clone(rc.Headers)
	return callOptionFunc(func(c *callConfig) { c.reqCtx = &rc })
}

// NoCache makes the call ask the gateway even for pairs the cache holds
// (the cache is not read). The fresh answers still replace what the cache
// holds for their pairs, as every answer does: a GRANT or DENY is stored
// for later calls, and any other answer (ERROR, a malformed listing of the
// pair) removes the older entry, so that a later call never gets an older
// verdict than the one this call got. A call of several requests does
// read, before it returns, what the cache then holds for each GRANT it was
// answered before its last wait, as every call does (its own answer, or a
// newer one: a DENY there replaces the GRANT).
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

// maxScopesPerResource is the most scopes one resource entry of a request
// carries (the reference server's limit); more scopes for the same resource
// are sent as further entries with the same name.
const maxScopesPerResource = 50

// noContext is the decision context sent when the call has none.
const noContext = "{}"

type wireContext struct {
	Attributes wireAttributes `json:"attributes"`
}

// wireAttributes are the decision context's attributes. The spec makes
// headers a string, so the header map travels as its JSON text.
type wireAttributes struct {
	Method  string `json:"method,omitempty"`
	Path    string `json:"path,omitempty"`
	Headers string `json:"headers,omitempty"`
	Body    string `json:"body,omitempty"`
}

// requestContextJSON is contextJSON of a caller's request context, which
// is how every call's context is encoded (newCall). It refuses
// (ErrInvalidArgument, naming the field) a context holding a string that
// is not valid UTF-8, which encoding/json would write as another string;
// the JSON is read again, so that a field added later cannot slip by.
func requestContextJSON(rc *RequestContext) (string, error) {
	if rc == nil {
		return noContext, nil
	}
	if err := rc.check(); err != nil {
		return "", err
	}
	cj := contextJSON(rc)
	if !verbatim.JSON([]byte(cj)) {
		return "", notText("a field of the request context")
	}
	return cj, nil
}

// contextJSON is the canonical encoding of a request context: encoding/json
// sorts map keys, so equal contexts encode equally. It is both the request's
// "context" member and the context part of cache and coalescing keys. Its
// strings must be valid UTF-8 (requestContextJSON).
func contextJSON(rc *RequestContext) string {
	if rc == nil {
		return noContext
	}
	attrs := wireAttributes{Method: rc.Method, Path: rc.Path, Body: rc.Body}
	if len(rc.Headers) > 0 {
		attrs.Headers = string(mustJSON(rc.Headers))
	}
	return string(mustJSON(wireContext{Attributes: attrs}))
}

// check finds a field of rc that is not valid UTF-8.
func (rc *RequestContext) check() error {
	for _, f := range [...]struct{ name, s string }{{"Method", rc.Method}, {"Path", rc.Path}, {"Body", rc.Body}} {
		if !utf8.ValidString(f.s) {
			return notText("the request context's " + f.name)
		}
	}
	for k, v := range rc.Headers {
		if !utf8.ValidString(k) {
			return notText("a header name of the request context")
		}
		if !utf8.ValidString(v) {
			return notText("a header value of the request context")
		}
	}
	return nil
}

// notText is the error of a question's field, named by field, that is not
// valid UTF-8; it never holds the field's bytes.
func notText(field string) error {
	return fmt.Errorf("%w: %s %s", ErrInvalidArgument, field, verbatim.Problem)
}

// mustJSON encodes strings and string maps, which always encode; encoding/json
// sorts map keys, so equal values encode equally.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("pep: encoding a request context: " + err.Error())
	}
	return b
}

// authorizeBody encodes the request for a chunk of pairs, grouping
// consecutive pairs of one resource into one entry of at most
// maxScopesPerResource scopes. A wildcard pair (empty scope) gets an entry of
// its own with an empty scopes array. The body is small and fixed in shape,
// so it is appended by hand rather than by reflection; the bytes are those
// encoding/json would write for the same request. context is canonical
// JSON (contextJSON) and is copied as is.
func authorizeBody(clientID string, pairs []pair, context string) []byte {
	size := len(`{"clientId":"","resources":[],"context":}`) + len(clientID) + len(context)
	for _, p := range pairs {
		size += len(`{"name":"","scopes":[""]},`) + len(p.resource) + len(p.scope)
	}
	b := make([]byte, 0, size)
	b = append(b, `{"clientId":`...)
	b = verbatim.AppendJSON(b, clientID)
	b = append(b, `,"resources":[`...)
	scopes := 0 // scopes in the open entry; 0 when no entry is open
	for i, p := range pairs {
		if scopes > 0 && p.scope != "" && p.resource == pairs[i-1].resource && scopes < maxScopesPerResource {
			b = append(b, ',')
			b = verbatim.AppendJSON(b, p.scope)
			scopes++
			continue
		}
		if scopes > 0 {
			b = append(b, "]}"...)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = verbatim.AppendJSON(b, p.resource)
		b = append(b, `,"scopes":[`...)
		if p.scope == "" {
			b = append(b, "]}"...)
			scopes = 0
			continue
		}
		b = verbatim.AppendJSON(b, p.scope)
		scopes = 1
	}
	if scopes > 0 {
		b = append(b, "]}"...)
	}
	b = append(b, `],"context":`...)
	b = append(b, context...)
	return append(b, '}')
}
