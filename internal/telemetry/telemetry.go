// Package telemetry is the OpenTelemetry instrumentation the decision
// clients (pep and authzen) share: the spans of their public calls, the
// transport.Observer that makes a client span and the semantic
// conventions' HTTP client metrics for every request, and the client-level
// observable metrics (decisions by outcome, cache, breaker), registered for
// as long as the client lives. A Scope says whose they are: the
// instrumentation scope and the prefix of the client's own metric and
// attribute names ("pep.", "authzen.").
//
// It uses the OpenTelemetry API only (the application installs the SDK)
// and nothing of the clients' own packages, so that the transport and the
// core only ever call down into it.
// Nothing here records a token, a subject or a resource name: attributes
// are low-cardinality (counts, outcome, status, retries, breaker state, and
// the base attributes a client chooses).
package telemetry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"
	"weak"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/httpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/internal/safego"
)

// Scope names a client's instrumentation.
type Scope struct {
	// Name is the instrumentation scope of the tracer and the meter, the
	// client's import path.
	Name string
	// Prefix starts the client's own metric and attribute names, "pep." or
	// "authzen.".
	Prefix string
	// Items is what a call counts, "pairs" or "items": the call span's
	// attributes Prefix+Items and Prefix+Items+".cached".
	Items string
	// Outcomes are the values of the decisions metric's Prefix+"outcome"
	// attribute for the counts of Counts.Decisions: allowed, denied, not
	// evaluated, failed closed. An empty one is an outcome the client
	// does not have, which is not reported.
	Outcomes [4]string
}

// Telemetry is a client's tracer and instruments. It is the client's
// transport.Observer. Made by New, it is safe for concurrent use.
type Telemetry struct {
	tracer   trace.Tracer
	meter    metric.Meter
	scope    Scope
	duration httpconv.ClientRequestDuration
	active   httpconv.ClientActiveRequests
	// base are the attributes of every span and metric of the client;
	// server those of its requests (semantic conventions).
	base, server []attribute.KeyValue
	activeOpt    metric.AddOption
	// requestOpts start a request's span; made once, since a variadic
	// slice passed through the Tracer interface is allocated per call.
	requestOpts []trace.SpanStartOption
	// The client's own attribute keys.
	outcome, items, cached, retries, breaker attribute.Key
}

// New makes the telemetry of client c from the providers (the global ones
// when tp or mp is nil): its tracer, its HTTP client instruments and its
// observable metrics, which read reads from c's counters (see observe for
// how long they live). endpoint is the URL of the server the client sends
// its requests to (its host, port and scheme become the requests' server
// attributes); base are attributes of every span and metric of the client.
func New[C any](s Scope, c *C, read func(*C, *Counts), tp trace.TracerProvider, mp metric.MeterProvider, endpoint string, base ...attribute.KeyValue) (*Telemetry, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	t := &Telemetry{
		tracer:  tp.Tracer(s.Name),
		meter:   mp.Meter(s.Name),
		scope:   s,
		base:    base,
		outcome: attribute.Key(s.Prefix + "outcome"),
		items:   attribute.Key(s.Prefix + s.Items),
		cached:  attribute.Key(s.Prefix + s.Items + ".cached"),
		retries: attribute.Key(s.Prefix + "retries"),
		breaker: attribute.Key(s.Prefix + "breaker.state"),

		requestOpts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
	}
	if u, err := url.Parse(endpoint); err == nil {
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
	var err1, err2 error
	t.duration, err1 = httpconv.NewClientRequestDuration(t.meter)
	t.active, err2 = httpconv.NewClientActiveRequests(t.meter)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if err := observe(t, c, read); err != nil {
		return nil, err
	}
	return t, nil
}

// Counts are a client's counters as its observable metrics report them.
// Counters only grow; Breaker is the state now.
type Counts struct {
	// Decisions holds a count per Scope.Outcomes, in their order.
	Decisions [4]int64
	// CacheHits, CacheMisses and CacheEvictions are the decision cache's.
	CacheHits, CacheMisses, CacheEvictions uint64
	// Breaker is the circuit breaker's state: 0 closed, 1 open, 2
	// half-open.
	Breaker int64
	// Replicas is set for a client with an invalidation channel, whose
	// Invalidations (purges received and applied) and InvalidationGaps
	// (the times the channel went down) are observed.
	Replicas                        bool
	Invalidations, InvalidationGaps uint64
}

// observe registers the client-level observable metrics of c with t's
// meter: Prefix+"decisions" by Prefix+"outcome", Prefix+"cache.hits",
// Prefix+"cache.misses", Prefix+"cache.evictions",
// Prefix+"breaker.state", and, for a client with an invalidation channel,
// Prefix+"cache.invalidations" and Prefix+"cache.invalidation.gaps", read by read from c's own counters when the
// metric reader collects (nothing is recorded on a call's path).
//
// The callback holds c weakly, so a client nobody uses any more is
// collected and its instruments report nothing, and the registration is
// undone when c is collected: a service that makes clients as it goes (one
// per tenant, say) does not leave a callback and its memory in the meter
// provider for each client it dropped. read must therefore not hold c
// itself (a method expression such as (*Client).counts does not).
func observe[C any](t *Telemetry, c *C, read func(*C, *Counts)) error {
	p, meter := t.scope.Prefix, t.meter
	items := strings.ToUpper(t.scope.Items[:1]) + t.scope.Items[1:]
	unit := metric.WithUnit("{" + strings.TrimSuffix(t.scope.Items, "s") + "}")
	// An outcome the client does not have ("") is neither named nor observed.
	var names []string
	var outcomes [4]metric.ObserveOption
	for i, o := range t.scope.Outcomes {
		if o != "" {
			names = append(names, o)
			outcomes[i] = metric.WithAttributeSet(attribute.NewSet(append([]attribute.KeyValue{t.outcome.String(o)}, t.base...)...))
		}
	}
	decisions, err1 := meter.Int64ObservableCounter(p+"decisions",
		metric.WithDescription("Decisions the client returned, by outcome: "+strings.Join(names, ", ")+"."),
		metric.WithUnit("{decision}"))
	hits, err2 := meter.Int64ObservableCounter(p+"cache.hits",
		metric.WithDescription(items+" answered from the decision cache."), unit)
	misses, err3 := meter.Int64ObservableCounter(p+"cache.misses",
		metric.WithDescription(items+" the decision cache could not answer."), unit)
	evictions, err4 := meter.Int64ObservableCounter(p+"cache.evictions",
		metric.WithDescription("Live decisions pushed out of a full cache."), unit)
	breaker, err5 := meter.Int64ObservableGauge(p+"breaker.state",
		metric.WithDescription("The circuit breaker's state: 0 closed, 1 open, 2 half-open."))
	invalidations, err6 := meter.Int64ObservableCounter(p+"cache.invalidations",
		metric.WithDescription("Purges received from the other replicas' invalidation channel and applied."), metric.WithUnit("{purge}"))
	gaps, err7 := meter.Int64ObservableCounter(p+"cache.invalidation.gaps",
		metric.WithDescription("Times the invalidation channel went down (the cache was bypassed until it was back, then purged)."), metric.WithUnit("{gap}"))
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7); err != nil {
		return err
	}
	base := metric.WithAttributeSet(attribute.NewSet(t.base...))
	client := weak.Make(c)
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		c := client.Value()
		if c == nil {
			return nil
		}
		var n Counts
		read(c, &n)
		for i, opt := range outcomes {
			if opt != nil {
				o.ObserveInt64(decisions, n.Decisions[i], opt)
			}
		}
		o.ObserveInt64(hits, int64(n.CacheHits), base)
		o.ObserveInt64(misses, int64(n.CacheMisses), base)
		o.ObserveInt64(evictions, int64(n.CacheEvictions), base)
		o.ObserveInt64(breaker, n.Breaker, base)
		if n.Replicas {
			o.ObserveInt64(invalidations, int64(n.Invalidations), base)
			o.ObserveInt64(gaps, int64(n.InvalidationGaps), base)
		}
		return nil
	}, decisions, hits, misses, evictions, breaker, invalidations, gaps)
	if err != nil {
		return err
	}
	// The cleanup runs on the runtime's cleanup goroutine, where nothing
	// else would recover a panic of the user's meter SDK: it would end
	// the process. Its panic is dropped (the registration is gone with the
	// client either way).
	runtime.AddCleanup(c, func(r metric.Registration) { _ = safego.Call(func() { _ = r.Unregister() }) }, reg)
	return nil
}

// StartCall starts the span of a public call that goes to the server,
// counting its items and those answered from the cache. Its attributes
// are made only for a span that records.
func (t *Telemetry) StartCall(ctx context.Context, name string, items, cached int) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(t.base...)
		t.Count(span, items, cached)
	}
	return ctx, span
}

// Count sets (or, known only later, sets again) the counts of a call's
// span: its items and those answered from the cache.
func (t *Telemetry) Count(span trace.Span, items, cached int) {
	span.SetAttributes(t.items.Int(items), t.cached.Int(cached))
}

// CachedCall records a call answered wholly from the cache, as a span
// only inside a trace that is being recorded: the cached path consults no
// sampler and allocates nothing otherwise.
func (t *Telemetry) CachedCall(ctx context.Context, name string, items int, outcome string) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	_, span := t.StartCall(ctx, name, items, items)
	span.SetAttributes(t.outcome.String(outcome))
	span.End()
}

// EndCall ends a call's span with its outcome, and marks it failed when it
// returned an error.
func (t *Telemetry) EndCall(span trace.Span, outcome string, err error) {
	if span.IsRecording() {
		span.SetAttributes(t.outcome.String(outcome))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// OutcomeOfErr names the outcome of a call that returns no decisions: ok,
// or error.
func OutcomeOfErr(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// StartRequest starts the client span of one request (transport.Observer);
// the Exchanger sends its W3C trace context with the request.
func (t *Telemetry) StartRequest(ctx context.Context, url, breaker string) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, http.MethodPost, t.requestOpts...)
	if span.IsRecording() {
		span.SetAttributes(t.server...)
		span.SetAttributes(t.base...)
		span.SetAttributes(semconv.URLFull(url), t.breaker.String(breaker))
	}
	return ctx, span
}

// EndRequest ends a request's span and records its duration
// (transport.Observer); attributes are made only for what records.
func (t *Telemetry) EndRequest(ctx context.Context, span trace.Span, start time.Time, status, retries int, err error) {
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
		span.SetAttributes(t.retries.Int(retries))
		if status != 0 {
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		}
		if errType != "" {
			span.SetStatus(codes.Error, errType)
		}
	}
	span.End()
}

// ActiveAdd counts a request in or out of http.client.active_requests
// (transport.Observer).
func (t *Telemetry) ActiveAdd(ctx context.Context, n int64) {
	if t.active.Inst().Enabled(ctx) {
		t.active.Inst().Add(ctx, n, t.activeOpt)
	}
}

// errorType is the semantic conventions' error.type of a request: the
// status code of an error answer, or the kind of transport failure.
func errorType(status int, err error) string {
	switch {
	case status >= 400:
		return strconv.Itoa(status)
	case err == nil:
		return ""
	}
	return failureType(err)
}

// failureType is errorType for a request that failed: kept apart so that a
// request that did not fail allocates nothing here (errors.As makes netErr
// escape).
func failureType(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "_OTHER"
}
