package pep

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxBody is the most of a response body the client reads; a 200 body that
// is longer fails closed.
const maxBody = 1 << 20

// maxScopesPerResource is the most scopes one resource entry of a request
// carries (the reference server's limit); more scopes for the same resource
// are sent as further entries with the same name.
const maxScopesPerResource = 50

// noContext is the decision context sent when the call has none.
const noContext = "{}"

type wireAuthorizeRequest struct {
	ClientID  string          `json:"clientId"`
	Resources []wireResource  `json:"resources"`
	Context   json.RawMessage `json:"context"`
}

type wireResource struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

type wireContext struct {
	Attributes wireAttributes `json:"attributes"`
}

type wireAttributes struct {
	Method  string            `json:"method,omitempty"`
	Path    string            `json:"path,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

type wireAuthorizeResponse struct {
	Status      string           `json:"status"`
	Permissions []wirePermission `json:"permissions"`
}

type wirePermission struct {
	Resource string `json:"resource"`
	Scope    string `json:"scope"`
	Status   string `json:"status"`
}

type wireErrorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// contextJSON is the canonical encoding of a request context: encoding/json
// sorts map keys, so equal contexts encode equally. It is both the request's
// "context" member and the context part of cache and coalescing keys.
func contextJSON(rc *RequestContext) string {
	if rc == nil {
		return noContext
	}
	b, err := json.Marshal(wireContext{Attributes: wireAttributes{
		Method: rc.Method, Path: rc.Path, Headers: rc.Headers, Body: rc.Body,
	}})
	if err != nil { // strings and a string map always encode
		panic("pep: encoding a request context: " + err.Error())
	}
	return string(b)
}

// authorizeBody encodes the request for a chunk of pairs, grouping
// consecutive pairs of one resource into one entry. A wildcard pair (empty
// scope) gets an entry of its own with an empty scopes array.
func authorizeBody(clientID string, pairs []pair, context string) []byte {
	var res []wireResource
	for _, p := range pairs {
		if p.scope == "" {
			res = append(res, wireResource{Name: p.resource, Scopes: []string{}})
			continue
		}
		if n := len(res); n > 0 && res[n-1].Name == p.resource && len(res[n-1].Scopes) > 0 &&
			len(res[n-1].Scopes) < maxScopesPerResource {
			res[n-1].Scopes = append(res[n-1].Scopes, p.scope)
			continue
		}
		res = append(res, wireResource{Name: p.resource, Scopes: []string{p.scope}})
	}
	b, err := json.Marshal(wireAuthorizeRequest{ClientID: clientID, Resources: res, Context: json.RawMessage(context)})
	if err != nil {
		panic("pep: encoding an authorize request: " + err.Error())
	}
	return b
}

// readBody reads at most maxBody+1 bytes, so that an over-long body is seen.
func readBody(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, maxBody+1))
}

// responseError turns a non-200 answer into a *ResponseError.
func responseError(resp *http.Response, body []byte, token string) *ResponseError {
	var eb wireErrorBody
	_ = json.Unmarshal(body, &eb) // best effort: the status says enough
	e := &ResponseError{
		StatusCode: resp.StatusCode,
		ErrorName:  sanitize(eb.Error, token),
		Message:    sanitize(eb.Message, token),
		Challenge:  sanitize(resp.Header.Get("WWW-Authenticate"), token),
	}
	if e.Message == "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		e.Message = "redirects are not followed"
	}
	return e
}

// malformed is the Cause of a pair (or a chunk) whose 200 answer was
// unusable.
func malformed(format string, args ...any) *ResponseError {
	return &ResponseError{
		StatusCode: http.StatusOK,
		Err:        fmt.Errorf("%w: "+format, append([]any{ErrMalformedResponse}, args...)...),
	}
}

// matchAnswers parses a 200 authorize body and answers every pair of the
// chunk: exactly one decision for a specific pair (with a Cause when the
// pair is missing or came back with conflicting statuses), and the pairs the
// gateway listed for a wildcard pair. Pairs nobody asked for are ignored. An
// error means the whole body is unusable.
func matchAnswers(pairs []pair, body []byte, token string) ([][]Decision, error) {
	if len(body) > maxBody {
		return nil, malformed("the body exceeds %d bytes", maxBody)
	}
	var w wireAuthorizeResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, malformed("the body does not parse: %v", err)
	}
	if _, ok := parseStatus(w.Status); !ok {
		return nil, malformed("unknown status %q", sanitize(w.Status, token))
	}

	type seen struct {
		status   Status
		conflict bool
	}
	exact := make(map[pair]*seen, len(pairs))
	var wildcards []int
	for i, p := range pairs {
		if p.wildcard() {
			wildcards = append(wildcards, i)
		} else {
			exact[p] = nil
		}
	}
	listed := make([]map[pair]*seen, len(pairs)) // per wildcard pair
	order := make([][]pair, len(pairs))          // listing order per wildcard pair
	note := func(m map[pair]*seen, p pair, s Status) (isNew bool) {
		if prev := m[p]; prev != nil {
			prev.conflict = prev.conflict || prev.status != s
			return false
		}
		m[p] = &seen{status: s}
		return true
	}
	for _, wp := range w.Permissions {
		s, ok := parseStatus(wp.Status)
		if !ok {
			return nil, malformed("unknown status %q for a pair", sanitize(wp.Status, token))
		}
		p := pair{resource: wp.Resource, scope: wp.Scope}
		if p.wildcard() {
			continue // not a pair anybody can ask for
		}
		if _, asked := exact[p]; asked {
			note(exact, p, s)
		}
		for _, i := range wildcards {
			if pairs[i].covers(p) {
				if listed[i] == nil {
					listed[i] = map[pair]*seen{}
				}
				if note(listed[i], p, s) {
					order[i] = append(order[i], p)
				}
			}
		}
	}

	decide := func(p pair, sn *seen) Decision {
		d := Decision{Resource: p.resource, Scope: p.scope}
		switch {
		case sn == nil:
			d.Cause = malformed("pair %q/%q is missing", p.resource, p.scope)
		case sn.conflict:
			d.Cause = malformed("pair %q/%q came back with different statuses", p.resource, p.scope)
		default:
			d.Status = sn.status
		}
		return d
	}
	answers := make([][]Decision, len(pairs))
	for i, p := range pairs {
		if !p.wildcard() {
			answers[i] = []Decision{decide(p, exact[p])}
			continue
		}
		for _, lp := range order[i] {
			answers[i] = append(answers[i], decide(lp, listed[i][lp]))
		}
	}
	return answers, nil
}

// covers reports whether the wildcard pair w asks for p.
func (w pair) covers(p pair) bool {
	return (w.resource == "*" || w.resource == p.resource) && (w.scope == "" || w.scope == p.scope)
}

// flightKey identifies identical requests for coalescing: scheme, the full
// token and the exact body (client ID, pairs and context). Tokens hold no
// newline (validToken), so the key is unambiguous.
func flightKey(id tokenIdent, body []byte) string {
	var b strings.Builder
	b.Grow(2 + len(id.token) + len(body))
	b.WriteByte(byte('0' + id.scheme))
	b.WriteString(id.token)
	b.WriteByte('\n')
	b.Write(body)
	return b.String()
}
