// Package verbatim holds the clients' rule that a question goes out as the
// caller wrote it: encoding/json writes a string that is not valid UTF-8
// as another string (each invalid byte becomes U+FFFD), so a question
// holding one would be sent, cached and coalesced as another question. The
// clients refuse such strings before anything is sent, cached or
// coalesced; this package finds them, in strings, in values of any type and
// in the JSON the clients are about to send.
package verbatim

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Problem says what is wrong with a string of a question, for an error
// text that names the field: it never holds the caller's bytes.
const Problem = "is not valid UTF-8 (JSON cannot carry it as written: it would be sent as another string); pass text as UTF-8, and bytes that are not text in an encoding such as base64"

// maxDepth bounds Walk's descent: encoding/json refuses a value nested
// deeper than this as a cycle, and Marshal then says so.
const maxDepth = 1000

// maxNodes bounds the values Walk visits in all. Walk follows paths, and
// a value that holds one map or slice along several paths (a cycle with
// two ways back into itself, a diamond) has far more paths than values:
// past the bound Walk leaves the value to the encoder, whose output the
// clients read too (JSON), so that no check costs more than the encoding
// it guards.
const maxNodes = 1 << 16

// Walk returns "" when every string v holds, map keys included, is valid
// UTF-8, and otherwise what holds the first that is not: "a member name"
// or "a string". Values other than strings, maps and slices of the
// types encoding/json decodes into are encoded and their JSON read
// (JSON), so a struct, a map of another type or a json.Marshaler are
// covered too. It allocates only for those.
func Walk(v any) string {
	budget := maxNodes
	return walk(v, 0, &budget)
}

func walk(v any, depth int, budget *int) string {
	if *budget--; depth > maxDepth || *budget < 0 {
		return "" // a cycle, or a value shared along many paths: the encoder and JSON see to it
	}
	switch v := v.(type) {
	case nil, bool, float64, float32, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8, json.Number:
		if n, ok := v.(json.Number); ok && !utf8.ValidString(string(n)) {
			return "a number"
		}
		return ""
	case string:
		if !utf8.ValidString(v) {
			return "a string"
		}
		return ""
	case map[string]any:
		for k, e := range v {
			if !utf8.ValidString(k) {
				return "a member name"
			}
			if what := walk(e, depth+1, budget); what != "" {
				return what
			}
		}
		return ""
	case []any:
		for _, e := range v {
			if what := walk(e, depth+1, budget); what != "" {
				return what
			}
		}
		return ""
	case map[string]string:
		for k, e := range v {
			if !utf8.ValidString(k) {
				return "a member name"
			}
			if !utf8.ValidString(e) {
				return "a string"
			}
		}
		return ""
	case []string:
		for _, e := range v {
			if !utf8.ValidString(e) {
				return "a string"
			}
		}
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "" // not JSON at all: the encoder says so
	}
	if !JSON(b) {
		return "a string"
	}
	return ""
}

// JSON reports whether b, JSON as encoding/json writes it, holds the
// strings it was given: it is valid UTF-8 (a json.RawMessage or a
// json.Marshaler's output is copied as it is) and holds no escape
// \ufffd, which is what encoding/json writes for each byte of a string
// that is not valid UTF-8 (it writes a real U+FFFD as its UTF-8 bytes).
// A Marshaler that spells U+FFFD as the escape is refused with it.
func JSON(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+5 < len(b) && b[i+1] == 'u' && isFFFD(b[i+2:i+6]) {
			return false
		}
		i++ // the escaped character, a backslash included
	}
	return true
}

func isFFFD(h []byte) bool {
	for i, c := range h {
		c |= 0x20 // lower case for letters
		if i < 3 && c != 'f' || i == 3 && c != 'd' {
			return false
		}
	}
	return true
}

// AppendJSON appends s to b as a JSON string exactly as encoding/json
// writes it: printable ASCII that needs no escaping as it is, anything
// else through json.Marshal.
func AppendJSON(b []byte, s string) []byte {
	b, _ = AppendJSONPlain(b, s)
	return b
}

// AppendJSONPlain is AppendJSON, and reports whether every byte of s was
// written as it is (jsonPlain), which makes s printable ASCII, so valid
// UTF-8: a caller that must refuse invalid UTF-8 checks only when it is
// not.
func AppendJSONPlain(b []byte, s string) (_ []byte, plain bool) {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...), false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// jsonPlain holds true for the bytes encoding/json writes as they are in a
// string: the printable ASCII other than '"', '\\' and its HTML escapes
// <, > and &. Every protected request's path is read against it (pep's
// request context).
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = strings.IndexByte(`"\<>&`, byte(c)) < 0
	}
	return t
}()
