package grpcpep_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
)

// A method named in WithPublicMethods (here the standard health service,
// which orchestrators' probes call without a token) is served to anyone,
// with no decision; every other method, those of the same service not
// named included, is still guarded.
func TestPublicMethodsAreServedWithoutAToken(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	counter := &adaptertest.Counter{Checker: env.Client}
	svc := &orders{}
	conn := serveWith(t, svc, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, health.NewServer()) },
		guarded(counter, grpcpep.WithPublicMethods("/grpc.health.v1.Health/Check"))...)

	_, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err, "a health probe (no token) is refused")
	assert.Zero(t, counter.Calls(), "a public method is not decided")

	tests := []struct {
		name string
		call func() error
	}{
		{"the public service's other method", func() error {
			w, err := healthpb.NewHealthClient(conn).Watch(t.Context(), &healthpb.HealthCheckRequest{})
			if err != nil {
				return err
			}
			_, err = w.Recv()
			return err
		}},
		{"a guarded unary method", func() error { _, err := call(t.Context(), conn, adaptertest.OpRead, false); return err }},
		{"a guarded stream", func() error { _, err := call(t.Context(), conn, adaptertest.OpRead, true); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, codes.Unauthenticated, status.Code(tt.call()))
		})
	}
	assert.Zero(t, svc.ran.Load())
}
