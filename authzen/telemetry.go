package authzen

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// observer makes one client span per PDP request, as pep's telemetry does
// for the gateway: method, URL without query, status, retries, breaker
// state. Never a token, a subject or a resource.
type observer struct{ tracer trace.Tracer }

func newObserver(tp trace.TracerProvider) observer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return observer{tracer: tp.Tracer("github.com/orgauthz/orgauthz/authzen")}
}

func (o observer) StartRequest(ctx context.Context, url string, state transport.BreakerState) (context.Context, trace.Span) {
	return o.tracer.Start(ctx, "POST", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("http.request.method", http.MethodPost),
		attribute.String("url.full", url),
		attribute.String("authzen.breaker.state", state.String())))
}

func (observer) ActiveAdd(context.Context, int64) {}

func (observer) EndRequest(_ context.Context, span trace.Span, _ time.Time, status, retries int, err error) {
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	span.SetAttributes(attribute.Int("authzen.retries", retries))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// WithTracerProvider sets the OpenTelemetry tracer provider of the PDP
// request spans (default: the global one, a no-op until the application
// installs an SDK).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}
