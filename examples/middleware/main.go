// Command middleware is a small orders service protected by orgauthz: copy it
// into your own service.
//
// Start the reference server, then this service, then call it with a token:
//
//	go run ./mockserver/cmd/mockserver -fixture examples/fixtures/acme.json &
//	go run ./examples/middleware -gateway http://127.0.0.1:8080 -addr 127.0.0.1:8081 &
//	TOKEN=$(curl -s -d grant_type=password -d client_id=admin-cli -d username=carol -d password=carol \
//	    http://127.0.0.1:8080/realms/acme/protocol/openid-connect/token | jq -r .access_token)
//	curl -i -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8081/orders/42
//	curl -i -X DELETE -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8081/orders/42
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

func main() {
	gateway := flag.String("gateway", "http://127.0.0.1:8080", "access gateway (or reference server) base URL")
	realm := flag.String("realm", "acme", "realm of the callers' tokens")
	clientID := flag.String("client", "orders-api", "client whose resources and permissions are checked")
	addr := flag.String("addr", "127.0.0.1:8081", "address to serve on")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	client, err := pep.New(*gateway, *realm, *clientID, pep.WithLogger(logger))
	if err != nil {
		logger.Error("bad configuration", "err", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: routes(client), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logger.Info("orders service listening", "url", "http://"+*addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve", "err", err)
		os.Exit(1)
	}
}

// routes is the whole service: each route names the scope it needs.
func routes(c middleware.Checker) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", middleware.Require(c, "orders", "read")(http.HandlerFunc(showOrder)))
	mux.Handle("PUT /orders/{id}", middleware.Require(c, "orders", "read", "write")(http.HandlerFunc(updateOrder)))
	mux.Handle("DELETE /orders/{id}", middleware.Require(c, "orders", "delete")(http.HandlerFunc(deleteOrder)))
	// The resource can depend on the request.
	mux.Handle("GET /{kind}/{id}/approve", middleware.RequireFunc(c, func(r *http.Request) (string, []string) {
		return r.PathValue("kind"), []string{"approve"}
	})(http.HandlerFunc(approve)))
	return mux
}

func showOrder(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "order %s\n", r.PathValue("id"))
}

func updateOrder(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "order %s updated\n", r.PathValue("id"))
}

func deleteOrder(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "order %s deleted\n", r.PathValue("id"))
}

func approve(w http.ResponseWriter, r *http.Request) {
	// The middleware put its decision in the context.
	res, _ := middleware.DecisionFromContext(r.Context())
	fmt.Fprintf(w, "%s %s approved (%s)\n", r.PathValue("kind"), r.PathValue("id"), res.Status)
}
