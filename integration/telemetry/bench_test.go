package telemetry_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/orgauthz/orgauthz/internal/corpfixture"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// BenchmarkUncachedCheck is what telemetry costs an uncached Check: the
// client of pep's own BenchmarkUncachedCheck (no cache, default retries,
// breaker and timeout, against the reference server on loopback) with
// OpenTelemetry's default (global, no-op) providers, then with the SDK
// installed: every call sampled and recorded (two spans, the request's
// metrics), metrics read by a ManualReader nobody collects.
func BenchmarkUncachedCheck(b *testing.B) {
	srv := mockservertest.Start(b, mockserver.WithFixture(corpfixture.Corp))
	token := srv.Token("corp", "uma")
	ctx := context.Background()
	run := func(b *testing.B, opts ...pep.Option) {
		c, err := pep.New(srv.URL, "corp", "docs-api", append([]pep.Option{
			pep.WithHTTPClient(srv.Client()), pep.WithCache(0, 0, 0)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		c.SetToken(token)
		b.ReportAllocs()
		for b.Loop() {
			if d, err := c.Check(ctx, "docs", "read"); err != nil || !d.Allowed() {
				b.Fatalf("want a grant, got %v, %v", d, err)
			}
		}
	}
	b.Run("client", func(b *testing.B) { run(b) })
	b.Run("client-otel-sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
		defer tp.Shutdown(ctx)
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer mp.Shutdown(ctx)
		run(b, pep.WithTracerProvider(tp), pep.WithMeterProvider(mp))
	})
}
