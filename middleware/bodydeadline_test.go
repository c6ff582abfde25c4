package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
)

// TestTrustedFormBodyReadEndsWithTheRequestContext: with _method trusted,
// the middleware reads a urlencoded POST body before the decision; a
// client that sends part of it and stalls holds the guard only until the
// request's context ends, then gets the unavailable answer (a decision out
// of time), without a gateway call, over real HTTP/1.1 and HTTP/2.
// (a-client10b F3: the read ignored the context, and held the handler
// until the connection closed.)
func TestTrustedFormBodyReadEndsWithTheRequestContext(t *testing.T) {
	t.Parallel()
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("HTTP/2 %v", h2), func(t *testing.T) {
			t.Parallel()
			checker := &fakeChecker{grant: true}
			guard := middleware.Require(checker, "orders", "read").With(middleware.WithMethodOverride("_method"),
				middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second)))(reached)
			type answer struct{ code int }
			returned := make(chan answer, 1)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := context.WithCancel(r.Context())
				defer cancel()
				r = r.WithContext(ctx)
				r.Body = &adaptertest.StallingBody{ReadCloser: r.Body, Cancel: cancel}
				rec := &codeRecorder{ResponseWriter: w}
				guard.ServeHTTP(rec, r)
				returned <- answer{rec.code}
			}))
			if h2 {
				srv.EnableHTTP2 = true
				srv.StartTLS()
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)

			pr, pw := io.Pipe()
			t.Cleanup(func() { _ = pw.Close() })
			req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/orders/42", pr))(t)
			req.ContentLength = 1000
			req.Header.Set("Authorization", "Bearer not-a-real-token-at-all")
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			go func() {
				if _, err := pw.Write([]byte("_method=DELETE&x=")); err != nil {
					return
				}
				// ...and nothing more until the test ends.
			}()
			go func() {
				if resp, err := srv.Client().Do(req); err == nil {
					_ = resp.Body.Close()
				}
			}()

			hang := time.NewTimer(30 * time.Second) // a hang guard, not a measure
			defer hang.Stop()
			select {
			case a := <-returned:
				assert.Equal(t, http.StatusServiceUnavailable, a.code, "the unavailable answer")
			case <-hang.C:
				t.Fatal("the guard is still reading the body of a request whose context ended")
			}
			assert.Zero(t, checker.calls.Load(), "no gateway call")
		})
	}
}

// codeRecorder records the status a handler writes, passing it on; Unwrap
// gives http.ResponseController the writer underneath.
type codeRecorder struct {
	http.ResponseWriter
	code int
}

func (w *codeRecorder) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *codeRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingBody counts the reads of a request body.
type countingBody struct {
	io.Reader
	reads atomic.Int32
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return b.Reader.Read(p)
}

func (*countingBody) Close() error { return nil }

// TestTrustedFormBodyOfARequestOutOfTimeIsNotRead: a request whose
// context has already ended gets the unavailable answer before the
// middleware reads a byte of its body, with no gateway call.
func TestTrustedFormBodyOfARequestOutOfTimeIsNotRead(t *testing.T) {
	t.Parallel()
	checker := &fakeChecker{grant: true}
	guard := middleware.Require(checker, "orders", "read").With(middleware.WithMethodOverride("_method"),
		middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second)))(reached)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	body := &countingBody{Reader: strings.NewReader("_method=DELETE")}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders/42", body)
	req.Header.Set("Authorization", "Bearer abcdefghijklmnopqrstuvwxyz")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	guard.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Zero(t, body.reads.Load(), "no byte of the body read")
	assert.Zero(t, checker.calls.Load(), "no gateway call")
}
