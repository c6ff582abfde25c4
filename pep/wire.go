package pep

import (
	"encoding/json"
	"strings"
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
		if !jsonPlain[s[i]] {
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

// jsonPlain holds true for the bytes encoding/json writes as they are: the
// printable ASCII other than '"', '\\' and its HTML escapes <, > and &.
// Every protected request's path is read against it (appendRequestContext).
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = strings.IndexByte(`"\<>&`, byte(c)) < 0
	}
	return t
}()
