package grpcpep_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/orgauthz/orgauthz/grpcpep"
)

// grpc-go 1.85 runs a registered StreamDesc with neither ServerStreams
// nor ClientStreams as a unary call, past both interceptors: its handler
// would run with no decision. CheckServiceDesc names such a stream, and
// CheckedRegistrar refuses to register it, so the README's wiring cannot
// serve it; a well-formed descriptor registers as before.
func TestCheckedRegistrarRefusesAStreamWithoutFlags(t *testing.T) {
	t.Parallel()
	var ran atomic.Bool
	bare := &grpc.ServiceDesc{ServiceName: "bare.v1.Bare", HandlerType: (*any)(nil), Streams: []grpc.StreamDesc{{
		StreamName: "Do",
		Handler: func(any, grpc.ServerStream) error {
			ran.Store(true)
			return nil
		},
	}}}
	err := grpcpep.CheckServiceDesc(bare)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/bare.v1.Bare/Do")
	require.NoError(t, grpcpep.CheckServiceDesc((&orders{}).desc()))
	require.Error(t, grpcpep.CheckServiceDesc(nil))

	srv := grpc.NewServer()
	t.Cleanup(srv.Stop)
	reg := grpcpep.CheckedRegistrar(srv)
	require.PanicsWithValue(t, err.Error(), func() { reg.RegisterService(bare, struct{}{}) })
	reg.RegisterService((&orders{}).desc(), &orders{})
	assert.Equal(t, []string{"orders.v1.Orders"}, serviceNames(srv), "only the checked service is registered")
	assert.False(t, ran.Load())
}

func serviceNames(srv *grpc.Server) []string {
	var names []string
	for name := range srv.GetServiceInfo() {
		names = append(names, name)
	}
	return names
}
