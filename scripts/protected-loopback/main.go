// Command protected-loopback serves the target of scripts/protected-loopback.sh:
// a small JSON handler (GET /orders/{id}) alone on one port and behind
// middleware.Require on another, its pep client asking an in-process
// reference server. It listens on 127.0.0.1 only, writes a token that is
// granted orders read to -token-file (mode 0600; never to its output),
// prints "ready HANDLER_PORT PROTECTED_PORT" once both ports serve, and
// runs until it is killed. At exit it prints the client's gateway
// requests (1 when every request was a cache hit but the first).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// shop is the realm of middleware's benchmarks: ann may read orders.
var shop = mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
	Name:  "shop",
	Roles: []mockserver.FixtureRole{{Name: "viewer"}},
	Users: []mockserver.FixtureUser{{Username: "ann", Roles: []string{"viewer"}}},
	Clients: []mockserver.FixtureClient{{
		ClientID: "orders-api", Secret: "s3cret",
		Resources: []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read"}}},
		Permissions: []mockserver.FixturePermission{
			{Name: "viewers read", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
		},
	}},
}}}

// orderHandler is middleware's BenchmarkProtected handler.
var orderHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"id":"` + r.PathValue("id") + `","status":"shipped"}`))
})

func main() {
	tokenFile := flag.String("token-file", "", "where to write the Bearer token (required)")
	flag.Parse()
	if *tokenFile == "" {
		log.Fatal("protected-loopback: -token-file is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	gwLn := listen()
	gwURL := "http://" + gwLn.Addr().String()
	gw, err := mockserver.New(mockserver.WithFixture(shop), mockserver.WithIssuer(gwURL))
	if err != nil {
		log.Fatal(err)
	}
	go serve(gwLn, gw)
	token, err := gw.IssueToken("shop", "ann", mockserver.TokenLifetime(24*time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*tokenFile, []byte(token), 0o600); err != nil {
		log.Fatal(err)
	}
	// Grants are kept for an hour, so that every measured request is a
	// cached one: with the default 30 s, each expiry makes the requests in
	// flight wait for the one gateway request that renews the grant.
	client, err := pep.New(gwURL, "shop", "orders-api", pep.WithCache(pep.DefaultCacheSize, time.Hour, pep.DefaultDenyTTL))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	route := func(h http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("GET /orders/{id}", h)
		return mux
	}
	handlerLn, protectedLn := listen(), listen()
	go serve(handlerLn, route(orderHandler))
	go serve(protectedLn, route(middleware.Require(client, "orders", "read")(orderHandler)))
	fmt.Println("ready", port(handlerLn), port(protectedLn))
	<-ctx.Done()
	fmt.Println("gateway-requests", client.Stats().GatewayRequests)
}

func listen() net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	return ln
}

func serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func port(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }
