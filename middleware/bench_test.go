package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// discard is a protected handler that does nothing, so that a benchmark
// measures the middleware alone.
var discard = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

// BenchmarkRequire measures what the middleware adds to a granted request
// before the Checker is asked (a fake one that grants): a GET with no query
// and no body, which must pay nothing for the method override rules, and
// requests whose form the rules read.
func BenchmarkRequire(b *testing.B) {
	fc := &fakeChecker{res: result(pep.Grant, nil)}
	plain := middleware.Require(fc, "orders", "read")(discard)
	trusting := middleware.Require(fc, "orders", "read").With(middleware.WithMethodOverride("X-HTTP-Method-Override"))(discard)
	const multipartBody = "--b\r\nContent-Disposition: form-data; name=\"qty\"\r\n\r\n1\r\n--b--\r\n"
	for _, bc := range []struct {
		name, method, target, contentType, body string
		h                                       http.Handler
	}{
		{"GET", http.MethodGet, "/orders/42", "", "", plain},
		{"GET, an override trusted", http.MethodGet, "/orders/42", "", "", trusting},
		{"GET with a query", http.MethodGet, "/orders/42?page=2&size=50", "", "", plain},
		{"POST JSON", http.MethodPost, "/orders/42", "application/json", `{"qty":1}`, plain},
		{"POST form", http.MethodPost, "/orders/42", "application/x-www-form-urlencoded", "qty=1&note=hi", plain},
		{"POST multipart", http.MethodPost, "/orders/42", "multipart/form-data; boundary=b", multipartBody, plain},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := strings.NewReader(bc.body)
			req := httptest.NewRequest(bc.method, bc.target, body)
			req.Header.Set("Authorization", "Bearer tok")
			if bc.contentType != "" {
				req.Header.Set("Content-Type", bc.contentType)
			}
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				body.Reset(bc.body)
				req.Body = http.NoBody
				if bc.body != "" {
					req.Body = readCloser{body}
				}
				bc.h.ServeHTTP(w, req)
			}
		})
	}
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }
