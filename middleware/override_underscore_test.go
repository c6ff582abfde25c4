package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// TestUnderscoredGuardedHeaderIsRefused: CGI (so PHP: FrankenPHP, Caddy's
// php_fastcgi, Apache) reads '_' in a header name as '-', so Content_Type
// reaches Symfony as Content-Type, where net/http sees none: a JSON body
// the middleware took for a Content-Type-less (urlencoded) one. Every
// header the guards tell a body by, spelt with '_' or '.' (PHP reads it
// as '_') for '-' in any case, is refused with 400 before the handler
// runs, trusted or not.
func TestUnderscoredGuardedHeaderIsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct{ header, value, says string }{
		{"Content_Type", "application/json", "Content-Type"},
		{"content_type", "application/json", "Content-Type"},
		{"Content_Encoding", "gzip", "Content-Encoding"},
		{"Content_Length", "20", "Content-Length"},
		{"Transfer_Encoding", "chunked", "Transfer-Encoding"},
		// PHP reads '.' in a variable's name as '_', and Caddy's
		// php_fastcgi and FrankenPHP pass it on (a-last8).
		{"Content.Type", "application/json", "Content-Type"},
		{"Content.Encoding", "gzip", "Content-Encoding"},
	}
	for _, tc := range cases {
		for _, trusted := range []bool{false, true} {
			t.Run(tc.header, func(t *testing.T) {
				t.Parallel()
				guard := middleware.Require(&fakeChecker{res: result(pep.Grant, nil)}, "orders", "write")
				if trusted {
					guard = guard.With(middleware.WithMethodOverride("_method"))
				}
				reached := false
				h := guard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
				req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", strings.NewReader(`{"_method":"DELETE"}`))
				req.Header.Set("Authorization", "Bearer tok")
				req.Header[tc.header] = []string{tc.value}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				require.False(t, reached, "trusted %v: the handler ran", trusted)
				require.Equal(t, http.StatusBadRequest, rec.Code)
				require.Contains(t, rec.Body.String(), tc.says, "the error says which header to spell with '-'")
			})
		}
	}
}
