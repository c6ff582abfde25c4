package pep

import (
	"bytes"
	"encoding/json"
	"errors"
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
	attrs := wireAttributes{Method: rc.Method, Path: rc.Path, Body: rc.Body}
	if len(rc.Headers) > 0 {
		attrs.Headers = string(mustJSON(rc.Headers))
	}
	return string(mustJSON(wireContext{Attributes: attrs}))
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
	b = appendJSONString(b, clientID)
	b = append(b, `,"resources":[`...)
	scopes := 0 // scopes in the open entry; 0 when no entry is open
	for i, p := range pairs {
		if scopes > 0 && p.scope != "" && p.resource == pairs[i-1].resource && scopes < maxScopesPerResource {
			b = append(b, ',')
			b = appendJSONString(b, p.scope)
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
		b = appendJSONString(b, p.resource)
		b = append(b, `,"scopes":[`...)
		if p.scope == "" {
			b = append(b, "]}"...)
			scopes = 0
			continue
		}
		b = appendJSONString(b, p.scope)
		scopes = 1
	}
	if scopes > 0 {
		b = append(b, "]}"...)
	}
	b = append(b, `],"context":`...)
	b = append(b, context...)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it: printable ASCII that needs no escaping as it is, anything else
// through json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil { // a string always encodes
				panic("pep: encoding a string: " + err.Error())
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// readBody reads at most maxBody+1 bytes, so that an over-long body is seen.
// A declared length (Content-Length) within the limit sizes the buffer at
// once instead of growing it by doubling; a body longer than declared is
// still read, up to the limit.
func readBody(r io.Reader, declared int64) ([]byte, error) {
	limited := io.LimitReader(r, maxBody+1)
	if declared < 0 || declared > maxBody {
		return io.ReadAll(limited)
	}
	data := make([]byte, 0, declared+1) // one more byte: room to see the end without growing
	for {
		n, err := limited.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		switch {
		case err == io.EOF:
			return data, nil
		case err != nil:
			return data, err
		case len(data) == cap(data): // longer than declared
			data = append(data, 0)[:len(data)]
		}
	}
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
	if err := decodeAuthorize(body, &w); err != nil {
		return nil, malformed("the body does not parse: %v", err)
	}
	if _, ok := parseStatus(w.Status); !ok {
		return nil, malformed("unknown status %q", sanitize(w.Status, token))
	}

	// seen is what the body said about one pair; the zero value is a pair
	// asked for but not (yet) listed.
	type seen struct {
		status   Status
		listed   bool
		conflict bool
	}
	exact := make(map[pair]seen, len(pairs))
	var wildcards []int
	for i, p := range pairs {
		if p.wildcard() {
			wildcards = append(wildcards, i)
		} else {
			exact[p] = seen{}
		}
	}
	var (
		listed []map[pair]seen // per wildcard pair
		order  [][]pair        // listing order per wildcard pair
	)
	if len(wildcards) > 0 {
		listed = make([]map[pair]seen, len(pairs))
		order = make([][]pair, len(pairs))
	}
	note := func(m map[pair]seen, p pair, s Status) (isNew bool) {
		if prev := m[p]; prev.listed {
			prev.conflict = prev.conflict || prev.status != s
			m[p] = prev
			return false
		}
		m[p] = seen{status: s, listed: true}
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
					listed[i] = map[pair]seen{}
				}
				if note(listed[i], p, s) {
					order[i] = append(order[i], p)
				}
			}
		}
	}

	decide := func(p pair, sn seen) Decision {
		d := Decision{Resource: p.resource, Scope: p.scope}
		switch {
		case !sn.listed:
			d.Cause = malformed("pair %q/%q is missing", p.resource, p.scope)
		case sn.conflict:
			d.Cause = malformed("pair %q/%q came back with different statuses", p.resource, p.scope)
		default:
			d.Status = sn.status
		}
		return d
	}
	answers := make([][]Decision, len(pairs))
	single := make([]Decision, len(pairs)) // backs the one answer of each specific pair
	for i, p := range pairs {
		if !p.wildcard() {
			single[i] = decide(p, exact[p])
			answers[i] = single[i : i+1 : i+1]
			continue
		}
		for _, lp := range order[i] {
			answers[i] = append(answers[i], decide(lp, listed[i][lp]))
		}
	}
	return answers, nil
}

// decodeAuthorize parses an authorize answer into w exactly as
// json.Unmarshal does. A body of the shape gateways write, which is nearly
// every body, is read directly, without reflection: a JSON object with the
// members status and permissions (each at most once, spelt in lower case),
// permissions an array of objects with the members resource, scope and
// status, and every string printable ASCII without escapes. Any other body,
// malformed ones included, goes to json.Unmarshal, whose reading of it (and
// error) is the rule; a fuzz test holds the two to the same results.
//
// One reading is refused although json.Unmarshal accepts it: a body in which
// a member that decides (status, permissions, resource, scope) is named twice
// in one object, or spelt in another case (json.Unmarshal folds case and
// keeps the last value; other parsers keep the first). Two readers could
// take such a body for different answers, so it grants nothing.
func decodeAuthorize(body []byte, w *wireAuthorizeResponse) error {
	if (&scanner{b: body}).authorize(w) {
		return nil // the scanner takes each member once, spelt exactly
	}
	*w = wireAuthorizeResponse{}
	if err := json.Unmarshal(body, w); err != nil {
		return err
	}
	return unambiguous(body)
}

// errAmbiguousMember reports a body that names a deciding member twice.
var errAmbiguousMember = errors.New("a member is named twice or in another case")

// decidingMembers are the members of an authorize answer that a decision
// depends on.
var decidingMembers = [...]string{"status", "permissions", "resource", "scope"}

// unambiguous walks a well-formed body and reports errAmbiguousMember when an
// object names a deciding member twice, counting names that differ only in
// case (as json.Unmarshal matches them, bytes.EqualFold) as the same.
func unambiguous(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	// One frame per open object or array; objects record the deciding
	// members they named and whether the next token is a name.
	type frame struct {
		object, wantName bool
		named            [len(decidingMembers)]bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantName {
			if name, ok := tok.(string); ok {
				for i, m := range decidingMembers {
					if strings.EqualFold(name, m) {
						if name != m || top.named[i] {
							return errAmbiguousMember
						}
						top.named[i] = true
					}
				}
				top.wantName = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, wantName: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the enclosing object expects a name next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantName = true
		}
	}
}

// scanner reads the common shape of an authorize answer; its methods report
// false for anything outside it.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) authorize(w *wireAuthorizeResponse) bool {
	var sawStatus, sawPermissions bool
	ok := s.object(func(key []byte) bool {
		switch {
		case string(key) == "status" && !sawStatus:
			sawStatus = true
			return s.status(&w.Status)
		case string(key) == "permissions" && !sawPermissions:
			sawPermissions = true
			// Each permission is an object: the body's braces bound their number.
			w.Permissions = make([]wirePermission, 0, bytes.Count(s.b[s.i:], []byte{'{'}))
			return s.array(func() bool {
				w.Permissions = append(w.Permissions, wirePermission{})
				return s.permission(&w.Permissions[len(w.Permissions)-1])
			})
		}
		return false
	})
	s.space()
	return ok && s.i == len(s.b) // nothing but white space after the object
}

func (s *scanner) permission(p *wirePermission) bool {
	var sawResource, sawScope, sawStatus bool
	return s.object(func(key []byte) bool {
		var v []byte
		var ok bool
		switch {
		case string(key) == "resource" && !sawResource:
			sawResource = true
			v, ok = s.str()
			p.Resource = string(v)
		case string(key) == "scope" && !sawScope:
			sawScope = true
			v, ok = s.str()
			p.Scope = string(v)
		case string(key) == "status" && !sawStatus:
			sawStatus = true
			ok = s.status(&p.Status)
		}
		return ok
	})
}

// object reads an object, calling member for each key once the colon is
// read; member reads the value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		key, ok := s.str()
		if !ok || !s.next(':') || !member(key) {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// array reads an array, calling elem to read each element.
func (s *scanner) array(elem func() bool) bool {
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// status reads a string into *dst, without allocating for the three
// statuses of the wire format.
func (s *scanner) status(dst *string) bool {
	v, ok := s.str()
	switch string(v) {
	case "GRANT":
		*dst = "GRANT"
	case "DENY":
		*dst = "DENY"
	case "ERROR":
		*dst = "ERROR"
	default:
		*dst = string(v)
	}
	return ok
}

// str reads a string of printable ASCII without escapes and returns its
// contents, which encoding/json would decode to the same bytes.
func (s *scanner) str() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	for start := s.i; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// next skips white space and reads c if it comes next.
func (s *scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
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
