package middleware_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
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

// orderHandler is a small JSON endpoint, the protected handler of
// BenchmarkProtected: it reads the path value the mux set and writes a
// short body.
var orderHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"id":"` + r.PathValue("id") + `","status":"shipped"}`))
})

// BenchmarkProtected compares a request to orderHandler behind
// middleware.Require with a pep client whose cache holds the caller's
// decision, against the reference server ("protected"), with the same
// request to the handler alone ("handler"), in one run: each op serves one
// request, made once, through a mux into a new ResponseRecorder, so that
// what the middleware adds is compared with the handler's own work, not
// with the cost of parsing a request. "protected-own" uses the client's
// own token (WithClientToken).
func BenchmarkProtected(b *testing.B) {
	gw := mockservertest.Start(b, mockserver.WithFixture(shop))
	client, err := pep.New(gw.URL, "shop", "orders-api")
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	own, err := pep.New(gw.URL, "shop", "orders-api")
	if err != nil {
		b.Fatal(err)
	}
	defer own.Close()
	tok := gw.Token("shop", "ann")
	own.SetToken(tok)
	auth := "Bearer " + tok
	route := func(h http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("GET /orders/{id}", h)
		return mux
	}
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"handler", route(orderHandler)},
		{"protected", route(middleware.Require(client, "orders", "read")(orderHandler))},
		{"protected-own", route(middleware.Require(own, "orders", "read").With(middleware.WithClientToken())(orderHandler))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/orders/42", nil)
			req.Header.Set("Authorization", auth)
			serve := func() *httptest.ResponseRecorder {
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, req)
				return w
			}
			if w := serve(); w.Code != http.StatusOK { // warms the cache
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
			b.ReportAllocs()
			for b.Loop() {
				if w := serve(); w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
	if s := client.Stats(); s.GatewayRequests != 1 {
		b.Fatalf("the client made %d gateway requests, want 1: the benchmark measured misses", s.GatewayRequests)
	}
}

// BenchmarkProtectedLoopback serves orderHandler over loopback HTTP, alone
// ("handler") and behind middleware.Require with a warm cache
// ("protected"), to a Go load generator in the same process: 16
// goroutines (b.SetParallelism(8) on two cores) sending GETs over
// keep-alive connections, one request per op, so that ns/op is the inverse
// of the request rate. p50-ns and p99-ns are the latencies the goroutines
// measured, each request from before it is sent to when its body is read.
// The generator shares the machine's cores with the server, as wrk on the
// same host would.
func BenchmarkProtectedLoopback(b *testing.B) {
	gw := mockservertest.Start(b, mockserver.WithFixture(shop))
	client, err := pep.New(gw.URL, "shop", "orders-api")
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	auth := "Bearer " + gw.Token("shop", "ann")
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"handler", orderHandler},
		{"protected", middleware.Require(client, "orders", "read")(orderHandler)},
	} {
		mux := http.NewServeMux()
		mux.Handle("GET /orders/{id}", bc.h)
		srv := httptest.NewServer(mux) // 127.0.0.1
		const parallelism = 8
		tr := &http.Transport{MaxIdleConnsPerHost: 2 * parallelism * runtime.GOMAXPROCS(0)}
		hc := &http.Client{Transport: tr}
		get := func() error {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/orders/42", nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", auth)
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			return err
		}
		if err := get(); err != nil { // warms the cache and a connection
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			b.SetParallelism(parallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				mine := make([]time.Duration, 0, 1024)
				for pb.Next() {
					start := time.Now()
					if err := get(); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
			}
		})
		tr.CloseIdleConnections()
		srv.Close()
	}
}
