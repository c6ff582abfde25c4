package middleware_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// TestLowercasePostBodyIsGuardedAsPost: a method is POST in any case for
// the body guards. net/http serves "post", the reference gateway grants it
// under a POST-only permission (it compares methods ignoring case), and
// Symfony upper-cases the method before it takes _method from the body
// (Laravel from a JSON one too): a "post" body naming _method never
// reaches a handler's read, trusted or not.
func TestLowercasePostBodyIsGuardedAsPost(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, method, ct, body string }{
		{"json", "post", "application/json", `{"_method":"DELETE"}`},
		{"urlencoded", "post", "application/x-www-form-urlencoded", "_method=DELETE"},
		{"multipart", "Post", "multipart/form-data; boundary=Z",
			"--Z\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--Z--\r\n"},
	}
	for _, tc := range cases {
		for _, trusted := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				guard := middleware.Require(&fakeChecker{res: result(pep.Grant, nil)}, "orders", "write")
				if trusted {
					guard = guard.With(middleware.WithMethodOverride("_method"))
				}
				var readErr error
				reached := false
				h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					reached = true
					_, readErr = io.ReadAll(r.Body)
				}))
				req := httptest.NewRequestWithContext(t.Context(), tc.method, "/orders/42", strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer tok")
				req.Header.Set("Content-Type", tc.ct)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if !reached {
					require.Equal(t, http.StatusBadRequest, rec.Code, "trusted %v: refused, as a 4xx that says why", trusted)
					return
				}
				require.True(t, errors.Is(readErr, middleware.ErrFormMethodOverride),
					"trusted %v: a %q body naming _method reached the handler's read (err %v)", trusted, tc.method, readErr)
			})
		}
	}
}
