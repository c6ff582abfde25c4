package adaptertest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/middleware"
)

// StallingBody is a request body that ends its request's context (Cancel)
// when the middleware comes back for more than the client sent: that read
// then waits on a client that stalls.
type StallingBody struct {
	io.ReadCloser
	Cancel context.CancelFunc
	reads  atomic.Int32
}

// Read reads from the body, ending the context on the second read.
func (b *StallingBody) Read(p []byte) (int, error) {
	if b.reads.Add(1) == 2 {
		b.Cancel()
	}
	return b.ReadCloser.Read(p)
}

// StalledFormBody checks that an adapter's guard, trusting _method, stops
// reading a urlencoded POST body before the decision when the request's
// context ends (the read goes through the framework's response writer,
// which must let http.ResponseController reach the connection): the
// client sends part of the body and stalls, the context ends, and the
// guard answers 503 (the unavailable answer) without a gateway call.
// service serves POST /orders/42 behind m on the framework's router.
func StalledFormBody(t *testing.T, service func(m middleware.Middleware) http.Handler) {
	t.Helper()
	calls := &Counter{Checker: Granter{}}
	m := middleware.Require(calls, "orders", "read").With(middleware.WithMethodOverride("_method"),
		middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second)))
	h := service(m)
	returned := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		r = r.WithContext(ctx)
		r.Body = &StallingBody{ReadCloser: r.Body, Cancel: cancel}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/orders/42", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 1000
	req.Header.Set("Authorization", "Bearer not-a-real-token-at-all")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	go func() { _, _ = pw.Write([]byte("_method=DELETE&x=")) }() // ...and nothing more
	status := make(chan int, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err != nil {
			status <- 0
			return
		}
		_ = resp.Body.Close()
		status <- resp.StatusCode
	}()
	hang := time.NewTimer(30 * time.Second) // a hang guard, not a measure
	defer hang.Stop()
	select {
	case <-returned:
	case <-hang.C:
		t.Fatal("the guard is still reading the body of a request whose context ended")
	}
	if code := <-status; code != http.StatusServiceUnavailable {
		t.Errorf("the answer was %d, want the unavailable answer, 503", code)
	}
	if n := calls.Calls(); n != 0 {
		t.Errorf("%d gateway calls, want none", n)
	}
}
