package telemetry_test

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// traceparents is an HTTP transport that records the traceparent header
// of every POST it sends.
type traceparents struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (tp *traceparents) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		tp.mu.Lock()
		tp.seen = append(tp.seen, r.Header.Get("Traceparent"))
		tp.mu.Unlock()
	}
	return tp.base.RoundTrip(r)
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// callWithRequest returns the span of the call named name, which ended
// last, and that of the one PDP request it sent, which ended just before.
func callWithRequest(t *testing.T, ended []sdktrace.ReadOnlySpan, name string) (call, request sdktrace.ReadOnlySpan) {
	t.Helper()
	call, request = ended[len(ended)-1], ended[len(ended)-2]
	require.Equal(t, name, call.Name())
	require.Equal(t, "POST", request.Name())
	require.Equal(t, trace.SpanKindClient, request.SpanKind())
	require.Equal(t, call.SpanContext().SpanID(), request.Parent().SpanID())
	return call, request
}

// assertAttrs checks that span s has the attributes of want, by value.
func assertAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[attribute.Key]any) {
	t.Helper()
	got := map[attribute.Key]any{}
	for k, v := range spanAttrs(s) {
		if _, ok := want[k]; ok {
			got[k] = v.AsInterface()
		}
	}
	assert.Equal(t, want, got, "attributes of span %s", s.Name())
}

func TestAuthZENTelemetry(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("../../authzen/testdata/todo/orgauthz-fixture.json"), es256Tokens)
	token := srv.Token("todo", "service-account-todo-api")
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	sent := &traceparents{base: srv.Client().Transport}

	c := testkit.Must(hangguard.NewAuthZEN(srv.URL+"/realms/todo", authzen.WithHTTPClient(&http.Client{Transport: sent}),
		authzen.WithRetry(0, 0, 0), authzen.WithTracerProvider(tp), authzen.WithMeterProvider(mp)))(t)
	// Closed when the test ends, and so reachable until then: the
	// metrics' callback holds the client only weakly, and a client
	// collected before reader.Collect reports nothing.
	t.Cleanup(func() { _ = c.Close() })
	c.SetToken(token)
	require.NoError(t, c.Discover(t.Context()))

	const rick = "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"
	const beth = "CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"
	read := authzen.Request{Subject: authzen.Subject{Type: "user", ID: rick}, Action: authzen.Action{Name: "can_read_user"},
		Resource: authzen.Resource{Type: "user", ID: "beth@the-smiths.com"}}
	del := authzen.Request{Subject: authzen.Subject{Type: "user", ID: beth}, Action: authzen.Action{Name: "can_delete_todo"},
		Resource: authzen.Resource{Type: "todo", ID: "todo-1"}}
	secrets := []string{token, rick, beth, "beth@the-smiths.com", "todo-1", "can_read_user", "can_delete_todo"}

	// An uncached Evaluate: a call span with a client span under it, whose
	// trace context reached the PDP.
	d := testkit.Must(c.Evaluate(t.Context(), read))(t)
	require.True(t, d.Allowed())
	require.Len(t, spans.Ended(), 2)
	call, request := callWithRequest(t, spans.Ended(), "authzen.Evaluate")
	assertAttrs(t, call, map[attribute.Key]any{"authzen.items": int64(1), "authzen.items.cached": int64(0), "authzen.outcome": "allow"})
	assertAttrs(t, request, map[attribute.Key]any{
		"http.response.status_code": int64(200), "http.request.method": "POST",
		"authzen.retries": int64(0), "authzen.breaker.state": "closed",
	})
	sent.mu.Lock()
	require.Len(t, sent.seen, 1)
	assert.Contains(t, sent.seen[0], request.SpanContext().TraceID().String(), "W3C trace context reaches the PDP")
	sent.mu.Unlock()

	// A batch, one item cached and one denied.
	ds := testkit.Must(c.Evaluations(t.Context(), authzen.Request{}, []authzen.Request{read, del}))(t)
	require.True(t, ds[0].Allowed())
	require.False(t, ds[1].Allowed())
	require.NoError(t, ds[1].Cause)
	batch := spans.Ended()[len(spans.Ended())-1]
	assert.Equal(t, "authzen.Evaluations", batch.Name())
	assertAttrs(t, batch, map[attribute.Key]any{
		"authzen.items": int64(2), "authzen.items.cached": int64(1),
		"authzen.outcome": "deny", "authzen.semantic": authzen.ExecuteAll.String(),
	})

	// The searches: a span each, counting the results.
	actions := testkit.Must(c.SearchAction(t.Context(), authzen.Request{Subject: read.Subject, Resource: del.Resource}))(t)
	require.NotEmpty(t, actions)
	testkit.Must(c.SearchResource(t.Context(), authzen.Request{Subject: read.Subject, Action: del.Action, Resource: authzen.Resource{Type: "todo"}}))(t)
	testkit.Must(c.SearchSubject(t.Context(), authzen.Request{Subject: authzen.Subject{Type: "user"}, Action: del.Action, Resource: del.Resource}))(t)
	names := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans.Ended() {
		names[s.Name()] = s
	}
	for _, n := range []string{"authzen.SearchAction", "authzen.SearchResource", "authzen.SearchSubject"} {
		require.Contains(t, names, n)
		assert.Equal(t, "ok", spanAttrs(names[n])["authzen.outcome"].AsString(), n)
	}
	assert.Equal(t, int64(len(actions)), spanAttrs(names["authzen.SearchAction"])["authzen.items"].AsInt64())

	// A fail-closed call: the PDP is gone.
	srv.Stop()
	d = testkit.Must(c.Evaluate(t.Context(), del, authzen.NoCache()))(t)
	require.ErrorIs(t, d.Cause, authzen.ErrUnavailable)
	failed := spans.Ended()[len(spans.Ended())-1]
	assert.Equal(t, "fail_closed", spanAttrs(failed)["authzen.outcome"].AsString())

	var rm metricdata.ResourceMetrics
	runtime.GC() // as a loaded run may, between the last call and Collect
	require.NoError(t, reader.Collect(t.Context(), &rm))
	sums := map[string]int64{} // by metric{outcome}
	var durations, breaker int
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, "github.com/orgauthz/orgauthz/authzen", sm.Scope.Name)
		for _, m := range sm.Metrics {
			var sets []attribute.Set
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					o, _ := dp.Attributes.Value("authzen.outcome")
					sums[m.Name+"{"+o.AsString()+"}"] += dp.Value
					sets = append(sets, dp.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					durations += int(dp.Count)
					sets = append(sets, dp.Attributes)
				}
			case metricdata.Gauge[int64]:
				require.Equal(t, "authzen.breaker.state", m.Name)
				breaker++
			}
			for _, set := range sets {
				for _, kv := range set.ToSlice() {
					for _, s := range secrets {
						assert.NotContains(t, kv.Value.String(), s, "no token, subject, action or resource in metric %s", m.Name)
					}
				}
			}
		}
	}
	assert.Equal(t, map[string]int64{
		"authzen.decisions{allow}": 2, "authzen.decisions{deny}": 1, "authzen.decisions{fail_closed}": 1,
		"authzen.cache.hits{}": 1, "authzen.cache.misses{}": 2, "authzen.cache.evictions{}": 0,
		"http.client.active_requests{}": 0,
	}, sums)
	posts := 0
	for _, s := range spans.Ended() {
		if s.Name() == "POST" {
			posts++
		}
		for _, kv := range s.Attributes() {
			for _, secret := range secrets {
				assert.NotContains(t, kv.Value.String(), secret, "no token, subject, action or resource in span %s", s.Name())
			}
		}
	}
	assert.Equal(t, posts, durations, "one duration per PDP request")
	assert.Equal(t, 1, breaker)
}

// A client registered with a real meter provider is still collected once
// dropped: its metrics' callback holds it only weakly.
func TestDroppedClientIsCollected(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	c := testkit.Must(hangguard.NewAuthZEN("http://127.0.0.1:1", authzen.WithMeterProvider(mp)))(t)
	c.SetToken(pepToken)
	w := weak.Make(c)
	c = nil
	for i := 0; i < 100 && w.Value() != nil; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.Nil(t, w.Value(), "the meter provider does not keep a dropped client")
}
