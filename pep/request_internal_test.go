package pep

import "testing"

// FuzzRequestContext holds the request context the middleware's requests
// are cached and sent under (appendRequestContext, built by hand without
// allocating) to the bytes contextJSON makes of the same context: a
// difference would file a request's decisions under another key than
// CheckMany's, or send another context than the one cached. A context it
// calls plain skips the UTF-8 check, so none that the check refuses may
// be.
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
		b, plain := appendRequestContext(nil, method, path)
		if got := string(b); got != want {
			t.Fatalf("appendRequestContext(%q, %q) = %s, contextJSON makes %s", method, path, got, want)
		}
		// plain spares the UTF-8 check: it must never be said of a
		// string the check refuses.
		if plain && checkRequestContext(method, path) != nil {
			t.Fatalf("appendRequestContext(%q, %q) calls invalid UTF-8 plain", method, path)
		}
	})
}
