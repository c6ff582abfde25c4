package pep

import (
	"testing"
	"unicode/utf8"
)

// FuzzRequestContext holds the request context the middleware's requests
// are cached and sent under (appendRequestContext, built by hand without
// allocating) to the bytes contextJSON makes of the same context: a
// difference would file a request's decisions under another key than
// CheckMany's, or send another context than the one cached.
func FuzzRequestContext(f *testing.F) {
	for _, seed := range [][2]string{
		{"GET", "/orders/42"}, {"", ""}, {"GET", ""}, {"", "/x"},
		{"POST", "/a<b>&c"}, {"PUT", "/\u2028\"\\"}, {"DELETE", "/\xff\xfe"},
		{"get", "/ünïcode/%2F"}, {"PATCH", "/a"}, {"HEAD", "/"}, {"GET ", "/"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		want := contextJSON(&RequestContext{Method: method, Path: path})
		if got := string(appendRequestContext(nil, method, path)); got != want {
			t.Fatalf("appendRequestContext(%q, %q) = %s, contextJSON makes %s", method, path, got, want)
		}
	})
}

// FuzzValidUTF8 holds validUTF8, which checkRequestContext refuses a
// method or path by, to utf8.ValidString.
func FuzzValidUTF8(f *testing.F) {
	for _, seed := range []string{"", "GET", "/orders/42", "/ünïcode", "/\xff", "/a\xe2\x82", "\xc0\x80", "\xed\xa0\x80"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validUTF8(s), utf8.ValidString(s); got != want {
			t.Fatalf("validUTF8(%q) = %v, utf8.ValidString says %v", s, got, want)
		}
	})
}
