package grpcpep_test

import (
	"log"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/pep"
)

// A gRPC server whose every call is decided by the gateway: unary and
// stream calls alike, by the full method name; a method the map does not
// list is refused.
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
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcpep.UnaryServerInterceptor(client, byMethod)),
		// An outage answered PermissionDenied rather than Unavailable.
		grpc.ChainStreamInterceptor(grpcpep.StreamServerInterceptor(client, byMethod,
			grpcpep.WithUnavailableCode(codes.PermissionDenied))),
	)
	defer srv.Stop()
	// Register the services, then srv.Serve(listener).

	// Output:
}
