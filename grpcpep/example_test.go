package grpcpep_test

import (
	"log"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/pep"
)

// A gRPC server whose every call is decided by the gateway: unary and
// stream calls alike, by the full method name; a method the map does not
// list is refused. The health service, which orchestrators' probes call
// without a token, is the one public service, named method by method;
// services are registered through CheckedRegistrar, which refuses a
// descriptor the interceptors could not guard.
func Example() {
	client, err := pep.New("https://gateway.example", "shop", "orders-api")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	byMethod := grpcpep.Map(map[string]grpcpep.Rule{
		"/orders.v1.Orders/Get":    {Resource: "orders", Scopes: []string{"read"}},
		"/orders.v1.Orders/Tail":   {Resource: "orders", Scopes: []string{"read"}},
		"/orders.v1.Orders/Cancel": {Resource: "orders", Scopes: []string{"write"}},
	})
	public := grpcpep.WithPublicMethods(grpcpep.HealthMethods...)
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcpep.UnaryServerInterceptor(client, byMethod, public)),
		// An outage answered PermissionDenied rather than Unavailable, and
		// an open stream decided again every minute.
		grpc.ChainStreamInterceptor(grpcpep.StreamServerInterceptor(client, byMethod, public,
			grpcpep.WithUnavailableCode(codes.PermissionDenied), grpcpep.WithStreamRedecide(time.Minute))),
	)
	defer srv.Stop()
	reg := grpcpep.CheckedRegistrar(srv)
	healthpb.RegisterHealthServer(reg, health.NewServer())
	// Register the other services with reg (orderspb.RegisterOrdersServer(reg, impl)),
	// then srv.Serve(listener).

	// Output:
}
