package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/pep"
)

// channel is an invalidation channel the test drives: Subscribe hands the
// client's receiver over and waits for the end.
type channel struct{ recv chan invalidation.Receiver }

func (ch channel) Publish(context.Context, []byte) error { return nil }

func (ch channel) Subscribe(ctx context.Context, r invalidation.Receiver) error {
	ch.recv <- r
	<-ctx.Done()
	return ctx.Err()
}

// TestInvalidationMetrics: a client with an invalidator reports the
// purges it applied and the times its channel went down.
func TestInvalidationMetrics(t *testing.T) {
	t.Parallel()
	g, _ := startOTelGateway(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	ch := channel{recv: make(chan invalidation.Receiver, 1)}
	c, err := hangguard.NewPep(g.URL, "corp", "docs-api", pep.WithHTTPClient(g.Client()), pep.WithMeterProvider(mp), pep.WithInvalidator(ch))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	r := <-ch.recv
	r.Heartbeat(time.Now())
	r.Message(append([]byte{1, 't'}, make([]byte, 32)...))
	r.Message([]byte{1, 'a'})
	r.Lost(errors.New("connection reset"))

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm))
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && len(sum.DataPoints) == 1 {
				got[m.Name] = sum.DataPoints[0].Value
			}
		}
	}
	assert.Equal(t, int64(2), got["pep.cache.invalidations"])
	assert.Equal(t, int64(1), got["pep.cache.invalidation.gaps"])
}
