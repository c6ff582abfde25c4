package pep

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"time"
	"weak"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/httpconv"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry (OpenTelemetry API only; the application installs the SDK):
//
// Spans: one per public call that goes to the gateway ("pep.Check",
// "pep.CheckMany", "pep.ListGranted", "pep.Organizations", "pep.Verify"),
// and under it one client span per gateway request ("POST"), whose W3C
// trace context is sent to the gateway. A call answered from the cache
// makes a span only inside a trace that is already being recorded, so the
// cached path consults no sampler and allocates nothing otherwise.
// Attributes are low-cardinality: realm, client, pair counts, outcome, HTTP
// status, retries, breaker state. Never a token; never a resource name.
//
// Metrics: pep.decisions by pep.outcome (grant, deny, error, fail_closed),
// pep.cache.hits, pep.cache.misses, pep.cache.evictions and
// pep.breaker.state, observed from the client's own counters when the
// metric reader collects (nothing is recorded on the call's path); and the
// semantic conventions' http.client.request.duration and
// http.client.active_requests for every gateway request.

// instrumentation is the name the client's tracer and meter carry.
const instrumentation = "github.com/orgauthz/orgauthz/pep"

// Attribute keys of the client's own.
const (
	attrRealm       = attribute.Key("pep.realm")
	attrClient      = attribute.Key("pep.client")
	attrOutcome     = attribute.Key("pep.outcome")
	attrPairs       = attribute.Key("pep.pairs")
	attrCachedPairs = attribute.Key("pep.pairs.cached")
	attrRetries     = attribute.Key("pep.retries")
	attrBreaker     = attribute.Key("pep.breaker.state")
)

// telemetry is a client's tracer and instruments.
type telemetry struct {
	tracer   trace.Tracer
	duration httpconv.ClientRequestDuration
	active   httpconv.ClientActiveRequests
	// base are the attributes of every span and metric of the client;
	// server those of its gateway requests (semantic conventions).
	base, server []attribute.KeyValue
	activeOpt    metric.AddOption
	registration metric.Registration
}

// newTelemetry makes the client's instruments from the providers, the
// global ones when tp or mp is nil.
func newTelemetry(c *Client, tp trace.TracerProvider, mp metric.MeterProvider, gateway string) (*telemetry, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	t := &telemetry{
		tracer: tp.Tracer(instrumentation),
		base:   []attribute.KeyValue{attrRealm.String(c.realm), attrClient.String(c.clientID)},
	}
	if u, err := url.Parse(gateway); err == nil {
		port, _ := strconv.Atoi(u.Port())
		if port == 0 {
			port = map[string]int{"http": 80, "https": 443}[u.Scheme]
		}
		t.server = []attribute.KeyValue{
			semconv.HTTPRequestMethodPost, semconv.ServerAddress(u.Hostname()),
			semconv.ServerPort(port), semconv.URLScheme(u.Scheme),
		}
	}
	t.activeOpt = metric.WithAttributeSet(attribute.NewSet(append(t.server, t.base...)...))

	meter := mp.Meter(instrumentation)
	var errs []error
	var err error
	if t.duration, err = httpconv.NewClientRequestDuration(meter); err != nil {
		errs = append(errs, err)
	}
	if t.active, err = httpconv.NewClientActiveRequests(meter); err != nil {
		errs = append(errs, err)
	}
	decisions, err1 := meter.Int64ObservableCounter("pep.decisions",
		metric.WithDescription("Decisions the client returned, by outcome: the gateway's grant, deny or error, or fail_closed."),
		metric.WithUnit("{decision}"))
	hits, err2 := meter.Int64ObservableCounter("pep.cache.hits",
		metric.WithDescription("Pairs answered from the decision cache."), metric.WithUnit("{pair}"))
	misses, err3 := meter.Int64ObservableCounter("pep.cache.misses",
		metric.WithDescription("Pairs the decision cache could not answer."), metric.WithUnit("{pair}"))
	evictions, err4 := meter.Int64ObservableCounter("pep.cache.evictions",
		metric.WithDescription("Live decisions pushed out of a full cache."), metric.WithUnit("{pair}"))
	breaker, err5 := meter.Int64ObservableGauge("pep.breaker.state",
		metric.WithDescription("The circuit breaker's state: 0 closed, 1 open, 2 half-open."))
	errs = append(errs, err1, err2, err3, err4, err5)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	base := metric.WithAttributeSet(attribute.NewSet(t.base...))
	outcome := func(o string) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(append([]attribute.KeyValue{attrOutcome.String(o)}, t.base...)...))
	}
	grant, deny, errored, failed := outcome("grant"), outcome("deny"), outcome("error"), outcome("fail_closed")
	// The callback holds the client weakly: a client nobody uses any more
	// is collected, and its instruments report nothing.
	client := weak.Make(c)
	t.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		c := client.Value()
		if c == nil {
			return nil
		}
		s := c.Stats()
		o.ObserveInt64(decisions, int64(c.granted.Load()+c.cachedGrants.Load()), grant)
		o.ObserveInt64(decisions, int64(c.denied.Load()+c.cachedDenies.Load()), deny)
		o.ObserveInt64(decisions, int64(c.errored.Load()), errored)
		o.ObserveInt64(decisions, int64(s.FailClosed), failed)
		o.ObserveInt64(hits, int64(s.CacheHits), base)
		o.ObserveInt64(misses, int64(s.CacheMisses), base)
		o.ObserveInt64(evictions, int64(s.CacheEvictions), base)
		o.ObserveInt64(breaker, int64(s.Breaker), base)
		return nil
	}, decisions, hits, misses, evictions, breaker)
	if err != nil {
		return nil, err
	}
	// The registration lives as long as the client: a service that makes
	// clients as it goes (one per tenant, say) must not leave a callback
	// and its memory in the meter provider for each client it dropped.
	runtime.AddCleanup(c, func(r metric.Registration) { _ = r.Unregister() }, t.registration)
	return t, nil
}

// startCall starts the span of a public call that goes to the gateway.
// Its attributes are made only for a span that records.
func (t *telemetry) startCall(ctx context.Context, name string, pairs, cached int) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(t.base...)
		span.SetAttributes(attrPairs.Int(pairs), attrCachedPairs.Int(cached))
	}
	return ctx, span
}

// cachedCall records a call answered wholly from the cache, as a span only
// inside a trace that is being recorded.
func (t *telemetry) cachedCall(ctx context.Context, name string, pairs int, outcome string) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	_, span := t.startCall(ctx, name, pairs, pairs)
	span.SetAttributes(attrOutcome.String(outcome))
	span.End()
}

// endCall ends a call's span with its outcome, and marks it failed when it
// returned an error.
func endCall(span trace.Span, outcome string, err error) {
	if span.IsRecording() {
		span.SetAttributes(attrOutcome.String(outcome))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// outcomeOf names the outcome of a call's decisions for its span: the
// overall status, or fail_closed when any pair failed closed.
func outcomeOf(ds []Decision) string {
	for _, d := range ds {
		if d.Cause != nil && !errors.Is(d.Cause, ErrNotEvaluated) {
			return "fail_closed"
		}
	}
	switch overall(ds) {
	case Grant:
		return "grant"
	case Error:
		return "error"
	}
	return "deny"
}

// outcomeOfErr names the outcome of a call that returns no decisions.
func outcomeOfErr(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// startRequest starts the client span of one gateway request; the caller
// sends its trace context (propagation.TraceContext) with the request.
func (t *telemetry) StartRequest(ctx context.Context, url string, state BreakerState) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, http.MethodPost, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(t.server...)
		span.SetAttributes(t.base...)
		span.SetAttributes(semconv.URLFull(url), attrBreaker.String(state.String()))
	}
	return ctx, span
}

// endRequest ends a gateway request's span and records its duration;
// attributes are made only for what records.
func (t *telemetry) EndRequest(ctx context.Context, span trace.Span, start time.Time, status, retries int, err error) {
	errType := errorType(status, err)
	if t.duration.Inst().Enabled(ctx) {
		attrs := make([]attribute.KeyValue, 0, len(t.server)+len(t.base)+2)
		attrs = append(attrs, t.server...)
		attrs = append(attrs, t.base...)
		if status != 0 {
			attrs = append(attrs, semconv.HTTPResponseStatusCode(status))
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		t.duration.Inst().Record(ctx, time.Since(start).Seconds(), metric.WithAttributeSet(attribute.NewSet(attrs...)))
	}
	if span.IsRecording() {
		span.SetAttributes(attrRetries.Int(retries))
		if status != 0 {
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		}
		if errType != "" {
			span.SetStatus(codes.Error, errType)
		}
	}
	span.End()
}

// activeAdd counts a gateway request in or out of
// http.client.active_requests.
func (t *telemetry) ActiveAdd(ctx context.Context, n int64) {
	if t.active.Inst().Enabled(ctx) {
		t.active.Inst().Add(ctx, n, t.activeOpt)
	}
}

// errorType is the semantic conventions' error.type of a gateway request:
// the status code of an error answer, or the kind of transport failure.
func errorType(status int, err error) string {
	var netErr net.Error
	switch {
	case status >= 400:
		return strconv.Itoa(status)
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, ErrCircuitOpen):
		return "circuit_open"
	}
	return "_OTHER"
}
