package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// TestPathsRoutersReadOtherwiseAreRefused: the path as sent (RawPath) is
// checked as the routers that read it (echo, chi, gin with UseRawPath) read
// it: an unreserved byte sent escaped ("/files/%70rivate/key" is routed to
// /files/* there, while FileServer serves private/key) and a RawPath left
// behind by a rewrite of Path (echo's RemoveTrailingSlash) are refused as
// an encoded slash is; escapes that must be (a space, non-ASCII, '%') and
// sub-delimiters as encodeURIComponent writes them pass (a-client10b F1: a
// false GRANT through echo and chi).
func TestPathsRoutersReadOtherwiseAreRefused(t *testing.T) {
	t.Parallel()
	guard := middleware.Require(&fakeChecker{res: result(pep.Grant, nil)}, "orders", "read")(reached)
	for _, tc := range []struct {
		name, target, path string // path, when set, replaces r.URL.Path after parsing (a rewrite)
		want               int
	}{
		{"an encoded slash as sent", "/files/private%2Fkey", "", http.StatusBadRequest},
		{"an escaped unreserved byte", "/files/%70rivate/key", "", http.StatusBadRequest},
		{"lower-case hex of a letter", "/files/%4b", "", http.StatusBadRequest},
		{"an escaped tilde", "/files/%7Ebob", "", http.StatusBadRequest},
		{"a stale RawPath holding an encoded slash", "/files/private%2Fkey/", "/files/private/key", http.StatusBadRequest},
		{"a stale RawPath of another path", "/files/caf%c3%a9", "/files/private", http.StatusBadRequest},
		{"a space", "/files/a%20b", "", http.StatusOK},
		{"non-ASCII, lower-case hex", "/files/caf%c3%a9", "", http.StatusOK},
		{"an email as encodeURIComponent writes it", "/users/alice%40example.com", "", http.StatusOK},
		{"a percent sign", "/files/100%25", "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, tc.target, nil)
			if tc.path != "" {
				req.URL.Path = tc.path // as echo's RemoveTrailingSlash does, RawPath untouched
			}
			req.Header.Set("Authorization", "Bearer abcdefghijklmnopqrstuvwxyz")
			rec := httptest.NewRecorder()
			guard.ServeHTTP(rec, req)
			assert.Equal(t, tc.want, rec.Code, "Path %q RawPath %q", req.URL.Path, req.URL.RawPath)
		})
	}
}
