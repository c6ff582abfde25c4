package telemetry_test

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/internal/corpfixture"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// otelGateway is the reference server with the corp fixture behind a
// handler that records the traceparent header of each decision request.
type otelGateway struct {
	*gatewaytest.Server
	mu          sync.Mutex
	traceparent []string
}

func startOTelGateway(t *testing.T) (*otelGateway, string) {
	t.Helper()
	gw, ln := gatewaytest.Listen(t)
	g := &otelGateway{Server: gw}
	srv := testkit.Must(mockserver.New(mockserver.WithFixture(corpfixture.Corp), mockserver.WithIssuer(g.URL), es256Tokens))(t)
	g.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/authorize") {
			g.mu.Lock()
			g.traceparent = append(g.traceparent, r.Header.Get("Traceparent"))
			g.mu.Unlock()
		}
		srv.ServeHTTP(w, r)
	}))
	token := testkit.Must(srv.IssueToken("corp", "uma"))(t)
	return g, token
}

func TestPEPTelemetry(t *testing.T) {
	t.Parallel()
	g, token := startOTelGateway(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })

	c := testkit.Must(hangguard.NewPep(g.URL, "corp", "docs-api", pep.WithHTTPClient(g.Client()),
		pep.WithTracerProvider(tp), pep.WithMeterProvider(mp)))(t)
	// Closed when the test ends, and so reachable until then: the
	// metrics' callback holds the client only weakly, and a client
	// collected before reader.Collect reports nothing.
	t.Cleanup(func() { _ = c.Close() })
	c.SetToken(token)

	// An uncached Check: a call span with a client span under it, whose
	// trace context reached the gateway.
	d := testkit.Must(c.Check(t.Context(), "docs", "read"))(t)
	require.True(t, d.Allowed())
	ended := spans.Ended()
	require.Len(t, ended, 2)
	request, call := ended[0], ended[1]
	assert.Equal(t, "pep.Check", call.Name())
	assert.Equal(t, "POST", request.Name())
	assert.Equal(t, trace.SpanKindClient, request.SpanKind())
	assert.Equal(t, call.SpanContext().SpanID(), request.Parent().SpanID())
	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = kv.Value
		}
		return m
	}
	ca := attrs(call)
	assert.Equal(t, "corp", ca["pep.realm"].AsString())
	assert.Equal(t, "docs-api", ca["pep.client"].AsString())
	assert.Equal(t, int64(1), ca["pep.pairs"].AsInt64())
	assert.Equal(t, int64(0), ca["pep.pairs.cached"].AsInt64())
	assert.Equal(t, "grant", ca["pep.outcome"].AsString())
	ra := attrs(request)
	assert.Equal(t, int64(200), ra["http.response.status_code"].AsInt64())
	assert.Equal(t, "POST", ra["http.request.method"].AsString())
	assert.Equal(t, int64(0), ra["pep.retries"].AsInt64())
	assert.Equal(t, "closed", ra["pep.breaker.state"].AsString())
	g.mu.Lock()
	require.Len(t, g.traceparent, 1)
	assert.Contains(t, g.traceparent[0], request.SpanContext().TraceID().String(), "W3C trace context reaches the gateway")
	g.mu.Unlock()

	// A cached Check outside any trace makes no span; inside a recorded
	// trace it makes one.
	testkit.Must(c.Check(t.Context(), "docs", "read"))(t)
	require.Len(t, spans.Ended(), 2)
	ctx, parent := tp.Tracer("test").Start(t.Context(), "handler")
	testkit.Must(c.Check(ctx, "docs", "read"))(t)
	parent.End()
	require.Len(t, spans.Ended(), 4)
	cached := spans.Ended()[2]
	assert.Equal(t, "pep.Check", cached.Name())
	assert.Equal(t, int64(1), attrs(cached)["pep.pairs.cached"].AsInt64())

	// A fail-closed call: the outage is on the spans and in the metrics.
	d = testkit.Must(c.Check(t.Context(), "nosuch", "read"))(t)
	assert.Equal(t, pep.Error, d.Status)

	var rm metricdata.ResourceMetrics
	runtime.GC() // as a loaded run may, between the last call and Collect
	require.NoError(t, reader.Collect(t.Context(), &rm))
	sums := map[string]map[string]int64{}
	var durations, active int
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, "github.com/orgauthz/orgauthz/pep", sm.Scope.Name)
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					o, _ := dp.Attributes.Value("pep.outcome")
					if sums[m.Name] == nil {
						sums[m.Name] = map[string]int64{}
					}
					sums[m.Name][o.AsString()] += dp.Value
					for _, kv := range dp.Attributes.ToSlice() {
						assert.NotContains(t, []string{"docs", "nosuch", "read"}, kv.Value.String(), "no resource or scope in a metric attribute")
						assert.NotContains(t, kv.Value.String(), token)
					}
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					durations += int(dp.Count)
				}
			case metricdata.Gauge[int64]:
				require.Equal(t, "pep.breaker.state", m.Name)
				assert.Equal(t, int64(0), data.DataPoints[0].Value)
			}
			if m.Name == "http.client.active_requests" {
				active++
			}
		}
	}
	assert.Equal(t, map[string]int64{"grant": 3, "deny": 0, "error": 1, "fail_closed": 0}, sums["pep.decisions"])
	assert.Equal(t, int64(2), sums["pep.cache.hits"][""])
	assert.Equal(t, 2, durations, "one duration per gateway request")
	assert.Equal(t, 1, active)
	for _, s := range spans.Ended() {
		for _, kv := range s.Attributes() {
			assert.NotContains(t, kv.Value.String(), token, "no token in a span attribute")
		}
	}
}

// With a real SDK installed, a cached Check outside a recorded trace still
// allocates nothing: no span is started, no metric recorded on its path.
func TestCachedCheckAllocatesNothingWithTheSDK(t *testing.T) {
	g, token := startOTelGateway(t)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	c := testkit.Must(hangguard.NewPep(g.URL, "corp", "docs-api", pep.WithHTTPClient(g.Client()),
		pep.WithTracerProvider(tp), pep.WithMeterProvider(mp)))(t)
	c.SetToken(token)
	ctx := t.Context()
	testkit.Must(c.Check(ctx, "docs", "read"))(t)
	allocs := testing.AllocsPerRun(1000, func() {
		if d, err := c.Check(ctx, "docs", "read"); err != nil || !d.Cached {
			t.Fatalf("expected a cache hit, got %+v, %v", d, err)
		}
	})
	assert.Zero(t, allocs)
}

// countingMeters is a no-op MeterProvider that counts the callbacks
// registered and not yet unregistered.
type countingMeters struct {
	noop.MeterProvider
	live atomic.Int64
}

func (p *countingMeters) Meter(string, ...metric.MeterOption) metric.Meter {
	return countingMeter{p: p}
}

type countingMeter struct {
	noop.Meter
	p *countingMeters
}

func (m countingMeter) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	m.p.live.Add(1)
	return &countedRegistration{p: m.p}, nil
}

type countedRegistration struct {
	noop.Registration
	p    *countingMeters
	once sync.Once
}

func (r *countedRegistration) Unregister() error {
	r.once.Do(func() { r.p.live.Add(-1) })
	return nil
}

// TestDroppedClientsLeaveNoCallbacks makes clients and drops them, as a
// service that makes one per tenant does, and requires that the meter
// provider is left with no callback of theirs: each held its client only
// weakly, but the registration and its memory stayed for the life of the
// process, and every collection ran every dropped client's callback.
func TestDroppedClientsLeaveNoCallbacks(t *testing.T) {
	mp := &countingMeters{}
	const clients = 200
	kept := make([]*pep.Client, 0, clients)
	for range clients {
		c := testkit.Must(hangguard.NewPep("http://127.0.0.1:1", testRealm, testClient, pep.WithMeterProvider(mp)))(t)
		kept = append(kept, c)
	}
	runtime.GC()
	require.Equal(t, int64(clients), mp.live.Load(), "a live client keeps its callback")
	runtime.KeepAlive(kept)
	kept = nil
	for i := 0; i < 100 && mp.live.Load() > 0; i++ {
		runtime.GC()      // the clients are unreachable: their cleanups are queued
		runtime.Gosched() // and run on the runtime's cleanup goroutine
	}
	assert.Zero(t, mp.live.Load(), "callbacks of collected clients are unregistered")
}
