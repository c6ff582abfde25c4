package gatewaytest

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// ErrorPanicTracerProvider is a user's TracerProvider whose spans panic
// when set to the Error status: a bug on the SDK's error path, as a 401's
// span has. Its spans record; everything else is a no-op.
type ErrorPanicTracerProvider struct{ noop.TracerProvider }

// Tracer returns a tracer whose spans panic on SetStatus(codes.Error, ...).
func (ErrorPanicTracerProvider) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return errorPanicTracer{}
}

type errorPanicTracer struct{ embedded.Tracer }

func (errorPanicTracer) Start(ctx context.Context, _ string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := errorPanicSpan{}
	return trace.ContextWithSpan(ctx, s), s
}

type errorPanicSpan struct{ noop.Span }

func (errorPanicSpan) IsRecording() bool { return true }
func (errorPanicSpan) SetStatus(c codes.Code, _ string) {
	if c == codes.Error {
		panic("a bug in the user's tracing SDK's error path")
	}
}
