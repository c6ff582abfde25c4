package transport

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestACallersTracestateIsBounded: the W3C trace context of the call goes
// out with its request, but a tracestate past 512 bytes, which a caller can
// make as large as its service's propagator takes (otelhttp: 32 members of
// 512 bytes), does not: it made a request too large for a front that closes
// the connection on large headers, and five opened the breaker every caller
// shares (a-last10).
func TestACallersTracestateIsBounded(t *testing.T) {
	t.Parallel()
	span := func(state string) context.Context {
		ts := testkit.Must(trace.ParseTraceState(state))(t)
		return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, TraceState: ts}))
	}
	x := &Exchanger{}
	small := "vendor=" + strings.Repeat("a", 200)
	req := testkit.Must(x.newPost(span(small), "http://gateway.example/authorize", []byte(`{}`), nil))(t)
	assert.Equal(t, small, req.Header.Get("Tracestate"))
	assert.NotEmpty(t, req.Header.Get("Traceparent"))

	var members []string
	for i := range 20 {
		members = append(members, "v"+string(rune('a'+i))+"="+strings.Repeat("b", 250))
	}
	req = testkit.Must(x.newPost(span(strings.Join(members, ",")), "http://gateway.example/authorize", []byte(`{}`), nil))(t)
	assert.Empty(t, req.Header.Values("Tracestate"), "a 5 KiB tracestate went out")
	assert.NotEmpty(t, req.Header.Get("Traceparent"), "the trace itself still goes out")
	// Nor does a propagating transport under it (otelhttp) find them in the
	// request's context (a-last10c F2), baggage included.
	assert.Zero(t, trace.SpanContextFromContext(req.Context()).TraceState().Len())
	m := testkit.Must(baggage.NewMember("k", strings.Repeat("v", 1000)))(t)
	b := testkit.Must(baggage.New(m))(t)
	req = testkit.Must(x.newPost(baggage.ContextWithBaggage(span(small), b), "http://gateway.example/authorize", []byte(`{}`), nil))(t)
	assert.Zero(t, baggage.FromContext(req.Context()).Len(), "a 1 KiB baggage went on")
	assert.Equal(t, small, trace.SpanContextFromContext(req.Context()).TraceState().String())
}
