package middleware

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// FuzzCanonicalPath holds canonicalPath's one pass to the rule as it was
// written before, segment by segment (canonicalPathByRule), on the paths
// net/url makes of any request target.
func FuzzCanonicalPath(f *testing.F) {
	for _, s := range []string{"/", "/a", "/a/", "//a", "/a//b", "/.", "/..", "/a/./b", "/a/..;/b", "/a/.. /b", "/a;v=1/b",
		"/;x", "/a/;", "/..;", "/a%2Fb", "/a%2fb", "/a%5Cb", "/a%252e", "/a%25", "/%c0%ae", "/%ff", "/a\\b", "/a%00b",
		"/a/b.c", "/a/...", "/a/.%20", "/a%3Bb", "/a/%2e%2e/b", "a", "", "/é/ü", "/a;/b", "/a/b;c/..", "/a/b;..;c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		r := &http.Request{URL: u}
		if got, want := canonicalPath(r), canonicalPathByRule(r); got != want {
			t.Fatalf("canonicalPath(Path %q, RawPath %q) = %v, want %v", u.Path, u.RawPath, got, want)
		}
	})
}

// canonicalPathByRule is canonicalPath as it was written before it read
// the path in one pass.
func canonicalPathByRule(r *http.Request) bool {
	p := r.URL.Path
	if p == "" || p[0] != '/' || !utf8.ValidString(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c < 0x20 || c == 0x7f || c == '\\':
			return false
		case c == '%' && i+2 < len(p) && ascii.IsHex(p[i+1]) && ascii.IsHex(p[i+2]):
			return false
		}
	}
	if raw := r.URL.RawPath; raw != "" && raw != p {
		return false
	}
	rest := p[1:]
	for {
		s, after, more := strings.Cut(rest, "/")
		if s == "" {
			return !more
		}
		name, _, _ := strings.Cut(s, ";")
		if strings.Trim(name, ". ") == "" {
			return false
		}
		if !more {
			return true
		}
		rest = after
	}
}

// TestCanonicalPathWithoutRawPath: a path that net/url decoded without
// an encoded separator (RawPath empty) has none when escaped again, which
// is why canonicalPath does not escape it: '/' is not escaped, and a
// backslash, which would be, is refused.
func TestCanonicalPathWithoutRawPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/a/b", "/a%b", "/a%25/2f", "/a b", "/a?b", "/é", "/a%2/f", "/%/5c"} {
		u := &url.URL{Path: p}
		require.Empty(t, u.RawPath)
		assert.False(t, encodedSeparator(u.EscapedPath()), p)
	}
}

// encodedSeparator reports whether an escaped path holds an encoded slash
// or backslash (%2f or %5c, in either case).
func encodedSeparator(escaped string) bool {
	for i := 0; i+2 < len(escaped); i++ {
		if escaped[i] != '%' {
			continue
		}
		switch a, b := escaped[i+1], escaped[i+2]|0x20; {
		case a == '2' && b == 'f', a == '5' && b == 'c':
			return true
		}
	}
	return false
}
