package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
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

// steady is the benchmarks' cache: the default one with grants kept for
// an hour, so that a run measures cached requests only. With the default
// 30 s, a grant expiring during a run makes every request in flight for
// the token wait for the one gateway request that renews it (the client
// shares identical requests): one gateway round trip for all of them,
// which moves a loopback run's p99 when it falls in it.
var steady = pep.WithCache(pep.DefaultCacheSize, time.Hour, pep.DefaultDenyTTL)

// BenchmarkProtected compares a request to orderHandler behind
// middleware.Require with a pep client whose cache holds the caller's
// decision, against the reference server ("protected"), with the same
// request to the handler alone ("handler"), in one run: each op serves one
// request, made once, through a mux into a new ResponseRecorder, so that
// what the middleware adds is compared with the handler's own work, not
// with the cost of parsing a request. "protected-own" uses the client's
// own token (WithClientToken). The decisions are cached by a CheckMany of
// the same question before the first request, not by a request through
// the mux, so that counting the instructions run inside the mux
// (BENCHMARKS.md) counts no gateway call.
func BenchmarkProtected(b *testing.B) {
	gw := mockservertest.Start(b, mockserver.WithFixture(shop))
	client := shopClient(b, gw.URL)
	own := shopClient(b, gw.URL)
	tok := gw.Token("shop", "ann")
	own.SetToken(tok)
	auth := "Bearer " + tok
	// The question the middleware asks for GET /orders/42.
	question := []pep.Resource{{Name: "orders", Scopes: []string{"read"}}}
	asked := pep.WithRequestContext(pep.RequestContext{Method: http.MethodGet, Path: "/orders/42"})
	for _, ask := range []func() (pep.Result, error){
		func() (pep.Result, error) {
			return client.CheckMany(pep.WithToken(b.Context(), tok), question, asked)
		},
		func() (pep.Result, error) { return own.CheckMany(b.Context(), question, asked) },
	} {
		if res, err := ask(); err != nil || !res.Allowed() {
			b.Fatalf("warming the cache: %+v, %v", res, err)
		}
	}
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
			growStack(64)
			req := httptest.NewRequest(http.MethodGet, "/orders/42", nil)
			req.Header.Set("Authorization", auth)
			serve := func() *httptest.ResponseRecorder {
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, req)
				return w
			}
			if w := serve(); w.Code != http.StatusOK {
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
	for _, c := range []*pep.Client{client, own} {
		if s := c.Stats(); s.GatewayRequests != 1 {
			b.Fatalf("a client made %d gateway requests, want 1: the benchmark measured misses", s.GatewayRequests)
		}
	}
}

// growStack grows the calling goroutine's stack by n KiB or so, once,
// before a benchmark's first request: valgrind's callgrind loses track of
// calls across a Go stack copy, so one that happens inside the function
// whose instructions are counted (BENCHMARKS.md) would count the rest of
// the run wrongly.
//
//go:noinline
func growStack(n int) byte {
	var buf [1024]byte
	if n > 0 {
		buf[n%len(buf)] = growStack(n - 1)
	}
	return buf[n%len(buf)]
}

// BenchmarkProtectedRatio is BenchmarkProtected's handler and protected
// requests in one loop: blocks of 256 requests to each in turn, each block
// timed, so that the load other programs put on the machine falls on both
// alike. One op is one request to each. It reports each side's time per
// request (handler-ns, protected-ns), their ratio over the run (ratio,
// target ≤ 1.3) and the median of the block pairs' ratios (median-ratio).
// A third side in the same blocks, floorGuard, is the least any guard
// keeping Require's promises can cost: floor-ns, and floor-ratio, the
// median of its blocks' ratios to the handler's.
func BenchmarkProtectedRatio(b *testing.B) {
	gw := mockservertest.Start(b, mockserver.WithFixture(shop))
	client := shopClient(b, gw.URL)
	auth := "Bearer " + gw.Token("shop", "ann")
	route := func(h http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("GET /orders/{id}", h)
		return mux
	}
	handler, protected := route(orderHandler), route(middleware.Require(client, "orders", "read")(orderHandler))
	floor := route(newFloorGuard(auth, orderHandler))
	req := httptest.NewRequest(http.MethodGet, "/orders/42", nil)
	req.Header.Set("Authorization", auth)
	const block = 256
	run := func(h http.Handler) time.Duration {
		start := time.Now()
		for range block {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
		return time.Since(start)
	}
	run(handler) // warms the cache
	run(protected)
	run(floor)
	var hSum, pSum, fSum time.Duration
	var ratios, floors []float64
	b.ResetTimer()
	for n := 0; n < b.N; n += block {
		h, p, f := run(handler), run(protected), run(floor)
		hSum, pSum, fSum = hSum+h, pSum+p, fSum+f
		ratios = append(ratios, float64(p)/float64(h))
		floors = append(floors, float64(f)/float64(h))
	}
	b.StopTimer()
	slices.Sort(ratios)
	slices.Sort(floors)
	requests := float64(len(ratios) * block)
	b.ReportMetric(float64(hSum)/requests, "handler-ns")
	b.ReportMetric(float64(pSum)/requests, "protected-ns")
	b.ReportMetric(float64(pSum)/float64(hSum), "ratio")
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	b.ReportMetric(float64(fSum)/requests, "floor-ns")
	b.ReportMetric(floors[len(floors)/2], "floor-ratio")
	if s := client.Stats(); s.GatewayRequests != 1 {
		b.Fatalf("the client made %d gateway requests, want 1: the benchmark measured misses", s.GatewayRequests)
	}
}

// floorGuard is the least a guard can do on a cached GRANT and keep
// Require's promises, the floor under BenchmarkProtectedRatio's ratio
// (BENCHMARKS.md): it reads every header name (the '_' and '.' spellings
// of Authorization are refused, so every name is read), takes the one
// Bearer token, finds the decision by the whole token, the method and the
// path in one map (two tokens never share a decision, even under a hash
// collision), reads the clock and a purge count (no GRANT past its TTL,
// none after its token's purge, a process frozen meanwhile included), and
// hands the handler the decision in its request's context
// (DecisionFromContext's promise: a request copy). It checks no path, no
// method override, no token grammar and no deadline, and records no span
// and no counter: whatever it leaves out only lowers the floor.
type floorGuard struct {
	decisions map[floorKey]*floorEntry
	purges    atomic.Uint64
	epoch     time.Time
	next      http.Handler
}

type floorKey struct{ token, method, path string }

type floorEntry struct {
	expires time.Duration // since the guard's epoch, on the monotonic clock
	purges  uint64
	granted bool
}

type floorCtxKey struct{}

// floorContext carries the decision as the middleware's context does.
type floorContext struct {
	context.Context
	d *floorEntry
}

func (c *floorContext) Value(k any) any {
	if k == (floorCtxKey{}) {
		return c.d
	}
	return c.Context.Value(k)
}

// newFloorGuard is a floorGuard holding a GRANT for auth's token on
// GET /orders/42 for an hour.
func newFloorGuard(auth string, next http.Handler) *floorGuard {
	g := &floorGuard{decisions: map[floorKey]*floorEntry{}, epoch: time.Now(), next: next}
	token := strings.Clone(strings.TrimPrefix(auth, "Bearer "))
	g.decisions[floorKey{token, http.MethodGet, "/orders/42"}] = &floorEntry{expires: time.Hour, granted: true}
	return g
}

func (g *floorGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var auth []string
	for name, v := range r.Header {
		if name == "Authorization" {
			auth = v
		} else if strings.ContainsAny(name, "_.") {
			http.Error(w, "a header spelled with '_' or '.'", http.StatusBadRequest)
			return
		}
	}
	if len(auth) != 1 || !strings.HasPrefix(auth[0], "Bearer ") {
		http.Error(w, "no Bearer token", http.StatusUnauthorized)
		return
	}
	e := g.decisions[floorKey{auth[0][len("Bearer "):], r.Method, r.URL.Path}]
	if e == nil || !e.granted || time.Since(g.epoch) >= e.expires || e.purges != g.purges.Load() {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	type carrier struct {
		req http.Request
		ctx floorContext
	}
	c := &carrier{ctx: floorContext{Context: r.Context(), d: e}}
	c.req = *r.WithContext(&c.ctx)
	g.next.ServeHTTP(w, &c.req)
}

// BenchmarkProtectedLoopback serves orderHandler over loopback HTTP, alone
// ("handler") and behind middleware.Require with a warm cache
// ("protected"), to a Go load generator in the same process: conns
// goroutines sending GETs over keep-alive connections, as wrk on the same
// host would, sharing the machine's cores with the servers. The two
// servers are asked in alternating phases of batch requests per
// connection, so that the load other programs put on the machine falls on
// both alike; one op is one pair of phases. It reports, per request, the
// wall time of each side's phases (handler-ns, protected-ns), their ratio
// as a rate (rate-ratio: handler time / protected time, ≥ 0.95 is the
// target), the median of the phase pairs' ratios (median-ratio), the ratio
// of the process's CPU time per request, client and servers together
// (cpu-ratio: handler / protected), and each side's p50 and p99 latency,
// from before a request is sent to when its body is read, with p99-ratio
// (protected / handler, ≤ 1.1 is the target).
func BenchmarkProtectedLoopback(b *testing.B) {
	gw := mockservertest.Start(b, mockserver.WithFixture(shop))
	client := shopClient(b, gw.URL)
	auth := "Bearer " + gw.Token("shop", "ann")
	const (
		conns = 16
		batch = 32 // requests per connection per phase
	)
	type side struct {
		url      string
		hc       *http.Client
		wall     time.Duration
		cpu      time.Duration
		requests int
		lat      []time.Duration
	}
	serve := func(h http.Handler) *side {
		mux := http.NewServeMux()
		mux.Handle("GET /orders/{id}", h)
		srv := httptest.NewServer(mux) // 127.0.0.1
		b.Cleanup(srv.Close)
		tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
		b.Cleanup(tr.CloseIdleConnections)
		return &side{url: srv.URL + "/orders/42", hc: &http.Client{Transport: tr}}
	}
	handler, protected := serve(orderHandler), serve(middleware.Require(client, "orders", "read")(orderHandler))
	get := func(s *side) error {
		req, err := http.NewRequest(http.MethodGet, s.url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", auth)
		resp, err := s.hc.Do(req)
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
	lats := make([][]time.Duration, conns)
	phase := func(s *side) time.Duration {
		start, startCPU := time.Now(), testkit.ProcessCPU(b)
		var wg sync.WaitGroup
		for i := range conns {
			wg.Go(func() {
				mine := lats[i][:0]
				for range batch {
					t := time.Now()
					if err := get(s); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(t))
				}
				lats[i] = mine
			})
		}
		wg.Wait()
		wall := time.Since(start)
		s.wall += wall
		s.cpu += testkit.ProcessCPU(b) - startCPU
		s.requests += conns * batch
		for _, l := range lats {
			s.lat = append(s.lat, l...)
		}
		return wall
	}
	// Warm both: the cache, the connections, the goroutines.
	phase(handler)
	phase(protected)
	for _, s := range []*side{handler, protected} {
		s.wall, s.cpu, s.requests, s.lat = 0, 0, 0, s.lat[:0]
	}
	var ratios []float64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// Alternate which side goes first, so that neither always follows
		// the other.
		var h, p time.Duration
		if i%2 == 0 {
			h, p = phase(handler), phase(protected)
		} else {
			p, h = phase(protected), phase(handler)
		}
		ratios = append(ratios, float64(h)/float64(p))
	}
	b.StopTimer()
	if b.Failed() || len(ratios) == 0 {
		return
	}
	perRequest := func(d time.Duration, s *side) float64 { return float64(d) / float64(s.requests) }
	quantile := func(s *side, q float64) float64 {
		slices.Sort(s.lat)
		return float64(s.lat[int(q*float64(len(s.lat)-1))])
	}
	slices.Sort(ratios)
	b.ReportMetric(perRequest(handler.wall, handler), "handler-ns")
	b.ReportMetric(perRequest(protected.wall, protected), "protected-ns")
	b.ReportMetric(perRequest(handler.wall, handler)/perRequest(protected.wall, protected), "rate-ratio")
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	b.ReportMetric(perRequest(handler.cpu, handler)/perRequest(protected.cpu, protected), "cpu-ratio")
	b.ReportMetric(quantile(handler, 0.5), "handler-p50-ns")
	b.ReportMetric(quantile(protected, 0.5), "protected-p50-ns")
	b.ReportMetric(quantile(handler, 0.99), "handler-p99-ns")
	b.ReportMetric(quantile(protected, 0.99), "protected-p99-ns")
	b.ReportMetric(quantile(protected, 0.99)/quantile(handler, 0.99), "p99-ratio")
	if s := client.Stats(); s.GatewayRequests != 1 {
		b.Fatalf("the client made %d gateway requests, want 1: the benchmark measured misses", s.GatewayRequests)
	}
}

// shopClient is a client of the shop fixture's orders-api at url, closed
// when the benchmark's run ends.
func shopClient(b *testing.B, url string) *pep.Client {
	c := testkit.Must(pep.New(url, "shop", "orders-api", steady))(b)
	b.Cleanup(func() { _ = c.Close() })
	return c
}
