package pep_test

// Benchmarks of the client (issue 7). Each one runs its baseline in the same
// run, as a sibling sub-benchmark, so that a ratio never mixes two runs:
//
//	go test -run '^$' -bench . -benchmem ./pep
//
// The gateway is the reference server (package mockserver) on a loopback
// httptest server with keep-alive; every client and baseline uses that
// server's *http.Client, so both sides share one connection pool and its
// idle connections are closed with the server.

import (
	"bytes"
	"container/list"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

const (
	benchRealm  = "acme"
	benchClient = "orders-api"
	// benchBulkResources resources of benchBulkScopes scopes each make the
	// 1,000 pairs of BenchmarkCheckMany1000.
	benchBulkResources = 20
	benchBulkScopes    = 50
)

// benchFixture: alice is a viewer; viewers may read orders and use every
// scope of the bulk resources r00..r19 (s00..s49 each).
func benchFixture() mockserver.Fixture {
	client := mockserver.FixtureClient{
		ClientID:  benchClient,
		Secret:    "orders-secret",
		Resources: []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read", "write", "delete"}}},
		Permissions: []mockserver.FixturePermission{
			{Name: "viewers read orders", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
		},
	}
	for _, r := range benchBulk() {
		client.Resources = append(client.Resources, mockserver.FixtureResource{Name: r.Name, Scopes: r.Scopes})
		client.Permissions = append(client.Permissions, mockserver.FixturePermission{
			Name: "viewers use " + r.Name, Resource: r.Name, Roles: []string{"viewer"},
		})
	}
	return mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:    benchRealm,
		Roles:   []mockserver.FixtureRole{{Name: "viewer"}},
		Users:   []mockserver.FixtureUser{{Username: "alice", Roles: []string{"viewer"}}},
		Clients: []mockserver.FixtureClient{client},
	}}}
}

// benchBulk is the 1,000 pairs of BenchmarkCheckMany1000 as resources.
func benchBulk() []pep.Resource {
	res := make([]pep.Resource, benchBulkResources)
	for i := range res {
		res[i].Name = fmt.Sprintf("r%02d", i)
		for j := range benchBulkScopes {
			res[i].Scopes = append(res[i].Scopes, fmt.Sprintf("s%02d", j))
		}
	}
	return res
}

// benchGateway is the reference server on loopback.
type benchGateway struct {
	srv    *mockserver.Server
	url    string
	client *http.Client // keep-alive; idle connections close with the server
}

// startBenchGateway serves the reference server, wrapped by wrap when it is
// not nil, on a loopback port until the benchmark ends.
func startBenchGateway(b *testing.B, wrap func(http.Handler) http.Handler) *benchGateway {
	b.Helper()
	gw, ln := gatewaytest.Listen(b)
	srv, err := mockserver.New(mockserver.WithFixture(benchFixture()), mockserver.WithIssuer(gw.URL))
	if err != nil {
		_ = ln.Close()
		b.Fatal(err)
	}
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	gw.Serve(ln, h)
	return &benchGateway{srv: srv, url: gw.URL, client: gw.Client()}
}

func (g *benchGateway) token(b *testing.B, opts ...mockserver.TokenOption) string {
	b.Helper()
	return testkit.Must(g.srv.IssueToken(benchRealm, "alice", opts...))(b)
}

func (g *benchGateway) newClient(b *testing.B, opts ...pep.Option) *pep.Client {
	b.Helper()
	return testkit.Must(pep.New(g.url, benchRealm, benchClient, append([]pep.Option{pep.WithHTTPClient(g.client)}, opts...)...))(b)
}

// uncached is a client without a cache, so every Check asks the gateway.
var uncached = pep.WithCache(0, 0, 0)

func mustGrant(b *testing.B, d pep.Decision, err error) {
	if err != nil || !d.Allowed() {
		b.Fatalf("want an allowed decision, got %+v, %v", d, err)
	}
}

// BenchmarkCachedCheck compares a cached Check with bare lookups of the same
// key shape (the full token, then one string of the resource, scope and
// context), built from the same strings (the token is a real access token
// of the reference server): a textbook LRU's lookup (textbookLRU), a map
// behind a sync.Mutex and a map behind a sync.RWMutex, serially and in
// parallel; and a map
// behind a sync.Mutex keyed by the token, resource, scope and context as
// fields (mutexmap-fields), the key shape before it became one string.
// Run it with -cpu 1,2: the parallel speed-up from one core to two is
// compared with the RWMutex map's.
func BenchmarkCachedCheck(b *testing.B) {
	g := startBenchGateway(b, nil)
	tok := g.token(b)
	// Long TTLs: the entry must outlive every run of -count and -cpu.
	c := g.newClient(b, pep.WithCache(pep.DefaultCacheSize, time.Hour, time.Hour))
	c.SetToken(tok)
	ctx := context.Background()
	d, err := c.Check(ctx, "orders", "read")
	mustGrant(b, d, err)

	l := newTextbookLRU[pep.CacheKey, pep.Status]()
	l.add(pep.NewCacheKey(tok, "orders", "read"), pep.Grant)
	var mu sync.Mutex
	var rw sync.RWMutex
	m := map[pep.CacheKey]pep.Status{pep.NewCacheKey(tok, "orders", "read"): pep.Grant}

	lookup := func() bool {
		s, ok := l.get(pep.NewCacheKey(tok, "orders", "read"))
		return ok && s == pep.Grant
	}
	mutexMap := func() bool {
		mu.Lock()
		s, ok := m[pep.NewCacheKey(tok, "orders", "read")]
		mu.Unlock()
		return ok && s == pep.Grant
	}
	fm := map[pep.FieldsKey]pep.Status{pep.NewFieldsKey(tok, "orders", "read"): pep.Grant}
	mutexMapFields := func() bool {
		mu.Lock()
		s, ok := fm[pep.NewFieldsKey(tok, "orders", "read")]
		mu.Unlock()
		return ok && s == pep.Grant
	}
	rwMap := func() bool {
		rw.RLock()
		s, ok := m[pep.NewCacheKey(tok, "orders", "read")]
		rw.RUnlock()
		return ok && s == pep.Grant
	}
	check := func() bool {
		d, err := c.Check(ctx, "orders", "read")
		return err == nil && d.Cached && d.Allowed()
	}
	// The middleware's way: the request's own token, by WithToken, on a
	// client without a token of its own.
	perCall := g.newClient(b, pep.WithCache(pep.DefaultCacheSize, time.Hour, time.Hour))
	tokCtx := pep.WithToken(ctx, tok)
	d, err = perCall.Check(tokCtx, "orders", "read")
	mustGrant(b, d, err)
	checkWithToken := func() bool {
		d, err := perCall.Check(tokCtx, "orders", "read")
		return err == nil && d.Cached && d.Allowed()
	}
	benchHits(b, []benchHit{{"lru", lookup}, {"mutexmap", mutexMap}, {"mutexmap-fields", mutexMapFields},
		{"rwmap", rwMap}, {"client", check}, {"client-withtoken", checkWithToken}})
}

// benchHit is a lookup a cached Check is compared with, or the Check.
type benchHit struct {
	name string
	hit  func() bool // reports a cached grant
}

// benchHits runs each hit serially and in parallel, as the sub-benchmarks
// serial/name and parallel/name; every call must report a cached grant.
func benchHits(b *testing.B, hits []benchHit) {
	for _, mode := range []string{"serial", "parallel"} {
		for _, sub := range hits {
			b.Run(mode+"/"+sub.name, func(b *testing.B) {
				b.ReportAllocs()
				if mode == "serial" {
					for b.Loop() {
						if !sub.hit() {
							b.Fatal("not a cached grant")
						}
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if !sub.hit() {
							b.Error("not a cached grant")
							return
						}
					}
				})
			})
		}
	}
}

// benchChecks runs b's loop of Checks of orders/read by c, each of which
// must grant, reporting allocations.
func benchChecks(b *testing.B, ctx context.Context, c *pep.Client) {
	b.ReportAllocs()
	for b.Loop() {
		d, err := c.Check(ctx, "orders", "read")
		mustGrant(b, d, err)
	}
}

// textbookLRU is the bare LRU a cached Check is compared with: a map of
// container/list elements behind a sync.RWMutex, whose lookup takes the
// lock alone and moves the entry to the front, as golang-lru's Cache does
// (the baseline until the library dropped golang-lru, issue 25). It never
// evicts: the benchmark adds one entry.
type textbookLRU[K comparable, V any] struct {
	mu    sync.RWMutex
	items map[K]*list.Element
	order list.List // of *textbookEntry, the most recently used first
}

type textbookEntry[K comparable, V any] struct {
	key   K
	value V
}

func newTextbookLRU[K comparable, V any]() *textbookLRU[K, V] {
	return &textbookLRU[K, V]{items: map[K]*list.Element{}}
}

func (l *textbookLRU[K, V]) add(k K, v V) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items[k] = l.order.PushFront(&textbookEntry[K, V]{key: k, value: v})
}

func (l *textbookLRU[K, V]) get(k K) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*textbookEntry[K, V]).value, true
}

// wireDecision is what the hand-written baseline decodes.
type wireDecision struct {
	Status      string `json:"status"`
	Permissions []struct {
		Resource string `json:"resource"`
		Scope    string `json:"scope"`
		Status   string `json:"status"`
	} `json:"permissions"`
}

// handWritten returns a minimal net/http client for one pair: the body the
// client sends, POSTed with the same token and connection pool, the answer
// decoded with encoding/json.
func handWritten(g *benchGateway, authorization string) func(ctx context.Context) (bool, error) {
	url := g.url + "/realms/" + benchRealm + "/authorization-decision-provider/authorize"
	body := []byte(`{"clientId":"` + benchClient + `","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return false, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", authorization)
		resp, err := g.client.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return false, err
		}
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("status %d", resp.StatusCode)
		}
		var d wireDecision
		if err := json.Unmarshal(data, &d); err != nil {
			return false, err
		}
		return len(d.Permissions) == 1 && d.Permissions[0].Status == "GRANT", nil
	}
}

// BenchmarkUncachedCheck compares a Check through the whole client (no
// cache, default retries, breaker and timeout) with a hand-written net/http
// POST of the same body to the same server. The allocations of the server,
// which runs in the benchmark's process, are counted on both sides.
func BenchmarkUncachedCheck(b *testing.B) {
	g := startBenchGateway(b, nil)
	tok := g.token(b)
	ctx := context.Background()

	b.Run("nethttp", func(b *testing.B) {
		post := handWritten(g, "Bearer "+tok)
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := post(ctx); err != nil || !ok {
				b.Fatalf("want a grant, got %v, %v", ok, err)
			}
		}
	})
	b.Run("client", func(b *testing.B) {
		c := g.newClient(b, uncached)
		c.SetToken(tok)
		benchChecks(b, ctx, c)
	})
	// client-otel-sdk, the same with OpenTelemetry's SDK installed, is in
	// integration/telemetry (BenchmarkUncachedCheck there), with the SDK.
	// The same with a context that can be cancelled, as an HTTP server's
	// request context.
	b.Run("client-cancellable-ctx", func(b *testing.B) {
		c := g.newClient(b, uncached)
		c.SetToken(tok)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		benchChecks(b, ctx, c)
	})
}

// BenchmarkUncachedCheckPaired is BenchmarkUncachedCheck's cancellable
// context case measured in pairs: blocks of calls of the client and of the
// hand-written baseline alternate within one loop, so that the machine's
// drift weighs on both alike (sub-benchmarks run one after the other, and
// on a shared machine the baseline's median moved by 25 % between them).
// It reports the medians over rounds of each side's time per call and of
// the per-round ratio, so that a round another process interrupts does not
// move them.
func BenchmarkUncachedCheckPaired(b *testing.B) {
	const block = 20
	g := startBenchGateway(b, nil)
	tok := g.token(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	post := handWritten(g, "Bearer "+tok)
	c := g.newClient(b, uncached)
	c.SetToken(tok)
	var base, client, ratio []float64
	for b.Loop() {
		start := time.Now()
		for range block {
			if ok, err := post(ctx); err != nil || !ok {
				b.Fatalf("want a grant, got %v, %v", ok, err)
			}
		}
		mid := time.Now()
		for range block {
			d, err := c.Check(ctx, "orders", "read")
			mustGrant(b, d, err)
		}
		nb, nc := float64(mid.Sub(start).Nanoseconds()), float64(time.Since(mid).Nanoseconds())
		base, client, ratio = append(base, nb/block/1e3), append(client, nc/block/1e3), append(ratio, nc/nb)
	}
	b.ReportMetric(median(base), "nethttp-µs/call")
	b.ReportMetric(median(client), "client-µs/call")
	b.ReportMetric(median(ratio), "client/nethttp")
}

// median returns the median of v, which it sorts.
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// BenchmarkUncachedCheckDPoP compares an uncached Check with a DPoP-bound
// token (a fresh ES256 proof per request, verified by the server) with the
// same Check with a Bearer token.
func BenchmarkUncachedCheckDPoP(b *testing.B) {
	ctx := context.Background()
	b.Run("Bearer", func(b *testing.B) {
		g := startBenchGateway(b, nil)
		c := g.newClient(b, uncached)
		c.SetToken(g.token(b))
		benchChecks(b, ctx, c)
	})
	b.Run("DPoP-ES256", func(b *testing.B) {
		// A server per run: its replay cache holds every proof of the run.
		g := startBenchGateway(b, nil)
		signer, err := dpop.GenerateKey()
		if err != nil {
			b.Fatal(err)
		}
		c := g.newClient(b, uncached)
		c.SetDPoPToken(g.token(b, mockserver.TokenDPoPBinding(signer.Thumbprint())), signer)
		benchChecks(b, ctx, c)
	})
}

// BenchmarkCheckMany1000 compares one CheckMany of 1,000 pairs (sent as
// requests of 100 pairs, at most 4 at a time) with 1,000 single uncached
// Checks of the same pairs, one after the other. An op is all 1,000 pairs.
func BenchmarkCheckMany1000(b *testing.B) {
	g := startBenchGateway(b, nil)
	tok := g.token(b)
	ctx := context.Background()
	resources := benchBulk()

	b.Run("Check-x1000", func(b *testing.B) {
		c := g.newClient(b, uncached)
		c.SetToken(tok)
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range resources {
				for _, s := range r.Scopes {
					d, err := c.Check(ctx, r.Name, s)
					mustGrant(b, d, err)
				}
			}
		}
	})
	b.Run("CheckMany", func(b *testing.B) {
		c := g.newClient(b, uncached)
		c.SetToken(tok)
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.CheckMany(ctx, resources)
			if err != nil || !res.Allowed() || len(res.Decisions) != benchBulkResources*benchBulkScopes {
				b.Fatalf("want 1,000 grants, got %d decisions, %v, %v", len(res.Decisions), res.Status, err)
			}
		}
		b.ReportMetric(float64(c.Stats().GatewayRequests)/float64(b.N), "requests/op")
	})
}

// BenchmarkCheckManyCachedAndAsked is one CheckMany of 1,000 cached pairs
// (GRANTs kept for an hour) and one pair the gateway is asked about on
// every call (a DENY, which the cache does not keep: its TTL is 0): the
// hits a call reads again once its request is done (a-client13 F2). An op
// is the call. "all-cached" is the same 1,000 pairs alone, which wait for
// nothing and are read once.
func BenchmarkCheckManyCachedAndAsked(b *testing.B) {
	g := startBenchGateway(b, nil)
	tok := g.token(b)
	ctx := context.Background()
	cached := benchBulk()
	withAsked := append(benchBulk(), pep.Resource{Name: "orders", Scopes: []string{"write"}})
	for _, tc := range []struct {
		name      string
		resources []pep.Resource
		want      pep.Status
	}{
		{"all-cached", cached, pep.Grant},
		{"cached-and-asked", withAsked, pep.Deny},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := g.newClient(b, pep.WithCache(pep.DefaultCacheSize, time.Hour, 0))
			c.SetToken(tok)
			if _, err := c.CheckMany(ctx, cached); err != nil { // the 1,000 GRANTs cached
				b.Fatal(err)
			}
			before := c.Stats().GatewayRequests
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.CheckMany(ctx, tc.resources)
				if err != nil || res.Status != tc.want {
					b.Fatalf("want %v, got %v, %v", tc.want, res.Status, err)
				}
			}
			b.ReportMetric(float64(c.Stats().GatewayRequests-before)/float64(b.N), "requests/op")
		})
	}
}

// BenchmarkCoalescing runs rounds of 64 goroutines asking the same uncached
// pair at once. The gateway holds each round's request until all 64 callers
// wait on it (the flight-wait test seam), so every round is the worst case,
// deterministically; requests/op counts the requests the gateway received
// per round, and the target is exactly 1.
func BenchmarkCoalescing(b *testing.B) {
	const callers = 64
	var (
		gate     atomic.Pointer[chan struct{}] // the current round's
		waiting  atomic.Int64
		requests atomic.Int64
	)
	g := startBenchGateway(b, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			<-*gate.Load()
			next.ServeHTTP(w, r)
		})
	})
	c := g.newClient(b, uncached, pep.WithFlightWaitHook(func() {
		if waiting.Add(1) == callers {
			close(*gate.Load())
		}
	}))
	c.SetToken(g.token(b))
	// A cancellable context, as concurrent server requests have: their
	// callers wait for the leader's request, and the hook runs once a
	// caller has joined the request.
	ctx := b.Context()

	b.ReportAllocs()
	rounds := 0
	for b.Loop() {
		open := make(chan struct{})
		gate.Store(&open)
		waiting.Store(0)
		var wg sync.WaitGroup
		var failed atomic.Bool
		for range callers {
			wg.Go(func() {
				if d, err := c.Check(ctx, "orders", "read"); err != nil || !d.Allowed() {
					failed.Store(true)
				}
			})
		}
		wg.Wait()
		if failed.Load() {
			b.Fatal("a caller was not granted")
		}
		rounds++
	}
	b.ReportMetric(float64(requests.Load())/float64(rounds), "requests/op")
	if sent := c.Stats().GatewayRequests; sent != uint64(rounds) {
		b.Errorf("the client sent %d requests in %d rounds", sent, rounds)
	}
}

// canned is an in-memory gateway: a RoundTripper that answers every
// request with answer, so that a benchmark measures the client alone.
type canned struct{ answer []byte }

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(c.answer)), ContentLength: int64(len(c.answer)), Request: r,
	}, nil
}

// grantAnswer is an authorize answer granting every pair of resources, each
// permission carrying extra as further members ("" for none).
func grantAnswer(resources []pep.Resource, extra string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"status":"GRANT","permissions":[`)
	first := true
	for _, r := range resources {
		for _, s := range r.Scopes {
			if !first {
				b.WriteByte(',')
			}
			first = false
			fmt.Fprintf(&b, `{"resource":%q,"scope":%q,"status":"GRANT"%s}`, r.Name, s, extra)
		}
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkAnswerShapes sends a CheckMany of 100 pairs to an in-memory
// gateway whose answer has the plain shape, or one more member per
// permission (valid and harmless; a gateway may explain its decisions), or
// escaped and non-ASCII strings: no shape may cost much more than the
// plain one.
func BenchmarkAnswerShapes(b *testing.B) {
	resources := []pep.Resource{{Name: "orders", Scopes: make([]string, 0, 100)}}
	for i := range 100 {
		resources[0].Scopes = append(resources[0].Scopes, fmt.Sprintf("s%02d", i))
	}
	shapes := []struct{ name, extra string }{
		{"plain", ""},
		{"unknown-member", `,"reason":"granted through the role viewer"`},
		{"escaped-unknown-member", `,"reason":"gew\u00e4hrt \"viewer\" ✓"`},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			c, err := pep.New("http://gateway.bench", benchRealm, benchClient, uncached,
				pep.WithHTTPClient(&http.Client{Transport: canned{answer: grantAnswer(resources, sh.extra)}}))
			if err != nil {
				b.Fatal(err)
			}
			c.SetToken("a-token-for-the-benchmark")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.CheckMany(ctx, resources)
				if err != nil || !res.Allowed() {
					b.Fatalf("want 100 grants, got %v, %v", res.Status, err)
				}
			}
		})
	}
}

// BenchmarkDPoPClientCost measures what a DPoP-bound token costs the client
// itself, against an in-memory gateway (the reference server's proof
// verification is not the client's cost): an uncached Check with a Bearer
// token, the same with a DPoP-bound token, one whole ES256 proof
// (dpop.Signer.Proof) and the bare ES256 signature a proof cannot do
// without (ecdsa.SignASN1 of a SHA-256 digest). The target is DPoP <=
// Bearer + one proof signature + 10 us; read against sign-ES256 it is the
// strict form.
func BenchmarkDPoPClientCost(b *testing.B) {
	answer := grantAnswer([]pep.Resource{{Name: "orders", Scopes: []string{"read"}}}, "")
	newClient := func(b *testing.B) *pep.Client {
		c, err := pep.New("http://gateway.bench", benchRealm, benchClient, uncached,
			pep.WithHTTPClient(&http.Client{Transport: canned{answer: answer}}))
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	key := testkit.Must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))(b)
	signer := testkit.Must(dpop.NewSigner(key))(b)
	const token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImNuZiI6eyJqa3QiOiJ4In19.c2lnbmF0dXJl"
	ctx := context.Background()
	b.Run("Bearer", func(b *testing.B) {
		c := newClient(b)
		c.SetToken(token)
		benchChecks(b, ctx, c)
	})
	b.Run("DPoP-ES256", func(b *testing.B) {
		c := newClient(b)
		c.SetDPoPToken(token, signer)
		benchChecks(b, ctx, c)
	})
	b.Run("proof-ES256", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := signer.Proof(http.MethodPost, "http://gateway.bench/realms/acme/authorization-decision-provider/authorize", token, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	sign := func(b *testing.B) {
		digest := sha256.Sum256([]byte(token))
		if _, err := ecdsa.SignASN1(rand.Reader, key, digest[:]); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("sign-ES256", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sign(b)
		}
	})
	// paired runs the four in alternating blocks within one loop, so that
	// the machine's drift weighs on all alike, and reports the median over
	// rounds of each side's time per call and of the client's own DPoP
	// cost beyond the Bearer call and the signature (the target's measure,
	// at most 10 us) and beyond the whole proof: medians of paired rounds,
	// so that a round another process interrupts does not move them.
	b.Run("paired", func(b *testing.B) {
		const block = 10
		bearer, bound := newClient(b), newClient(b)
		bearer.SetToken(token)
		bound.SetDPoPToken(token, signer)
		sides := []func(){
			func() { d, err := bearer.Check(ctx, "orders", "read"); mustGrant(b, d, err) },
			func() { d, err := bound.Check(ctx, "orders", "read"); mustGrant(b, d, err) },
			func() { sign(b) },
			func() {
				if _, err := signer.Proof(http.MethodPost, "http://gateway.bench/realms/acme/authorization-decision-provider/authorize", token, ""); err != nil {
					b.Fatal(err)
				}
			},
		}
		var rounds [][4]float64 // µs per call of each side, per round
		for b.Loop() {
			var r [4]float64
			for i, side := range sides {
				start := time.Now()
				for range block {
					side()
				}
				r[i] = float64(time.Since(start).Nanoseconds()) / block / 1e3
			}
			rounds = append(rounds, r)
		}
		median := func(f func(r [4]float64) float64) float64 {
			v := make([]float64, len(rounds))
			for i, r := range rounds {
				v[i] = f(r)
			}
			return median(v)
		}
		b.ReportMetric(median(func(r [4]float64) float64 { return r[0] }), "bearer-µs/call")
		b.ReportMetric(median(func(r [4]float64) float64 { return r[1] }), "dpop-µs/call")
		b.ReportMetric(median(func(r [4]float64) float64 { return r[2] }), "sign-µs")
		b.ReportMetric(median(func(r [4]float64) float64 { return r[3] }), "proof-µs")
		b.ReportMetric(median(func(r [4]float64) float64 { return r[1] - r[0] - r[2] }), "dpop-bearer-sign-µs")
		b.ReportMetric(median(func(r [4]float64) float64 { return r[1] - r[0] - r[3] }), "dpop-bearer-proof-µs")
	})
}

// chunkedBaseline is a hand-written client for CheckMany's job: the pairs in
// requests of 100, four at a time, over a transport that keeps 16 idle
// connections, each answer decoded with encoding/json.
func chunkedBaseline(g *benchGateway, authorization string, resources []pep.Resource) func(ctx context.Context) (int, error) {
	url := g.url + "/realms/" + benchRealm + "/authorization-decision-provider/authorize"
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	client := &http.Client{Transport: tr}
	type res struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	var bodies [][]byte
	var chunk []res
	n := 0
	flush := func() {
		b, _ := json.Marshal(map[string]any{"clientId": benchClient, "resources": chunk, "context": struct{}{}})
		bodies = append(bodies, b)
		chunk, n = nil, 0
	}
	for _, r := range resources {
		for _, s := range r.Scopes {
			if n == 100 {
				flush()
			}
			if len(chunk) == 0 || chunk[len(chunk)-1].Name != r.Name {
				chunk = append(chunk, res{Name: r.Name})
			}
			chunk[len(chunk)-1].Scopes = append(chunk[len(chunk)-1].Scopes, s)
			n++
		}
	}
	if n > 0 {
		flush()
	}
	return func(ctx context.Context) (int, error) {
		granted := make([]int, len(bodies))
		errs := make([]error, len(bodies))
		slots := make(chan struct{}, 4) // at most four requests in flight
		var wg sync.WaitGroup
		post := func(i int, body []byte) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", authorization)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var d wireDecision
			if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&d); err != nil {
				return err
			}
			for _, p := range d.Permissions {
				if p.Status == "GRANT" {
					granted[i]++
				}
			}
			return nil
		}
		for i, body := range bodies {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				errs[i] = post(i, body)
			})
		}
		wg.Wait()
		err := errors.Join(errs...)
		total := 0
		for _, n := range granted {
			total += n
		}
		return total, err
	}
}

// BenchmarkCheckMany1000Default compares CheckMany of 1,000 pairs with the
// client's default options (its own transport) against chunkedBaseline.
func BenchmarkCheckMany1000Default(b *testing.B) {
	g := startBenchGateway(b, nil)
	tok := g.token(b)
	ctx := context.Background()
	resources := benchBulk()
	b.Run("baseline-16-conns", func(b *testing.B) {
		post := chunkedBaseline(g, "Bearer "+tok, resources)
		b.ReportAllocs()
		for b.Loop() {
			if n, err := post(ctx); err != nil || n != benchBulkResources*benchBulkScopes {
				b.Fatalf("want 1,000 grants, got %d, %v", n, err)
			}
		}
	})
	b.Run("CheckMany-default", func(b *testing.B) {
		c, err := pep.New(g.url, benchRealm, benchClient, uncached)
		if err != nil {
			b.Fatal(err)
		}
		c.SetToken(tok)
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.CheckMany(ctx, resources)
			if err != nil || !res.Allowed() {
				b.Fatalf("want 1,000 grants, got %v, %v", res.Status, err)
			}
		}
	})
}
