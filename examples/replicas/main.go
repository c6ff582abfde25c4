// Command replicas is the orders service of examples/middleware made to
// run as many replicas: each replica has its own pep.Client, and the
// replicas share their cache purges through Redis, so that a token one of
// them learns is revoked (POST /logout, or a 401 from the gateway) is
// purged from every replica's cache. Copy it into your own service.
//
// Start the reference server and Redis, then two replicas:
//
//	go run ./mockserver/cmd/mockserver -fixture examples/fixtures/acme.json &
//	redis-server --port 6379 --save '' &
//	(cd examples/replicas && go run . -addr 127.0.0.1:8081 &)
//	(cd examples/replicas && go run . -addr 127.0.0.1:8082 &)
//	TOKEN=$(curl -s -d grant_type=password -d client_id=admin-cli -d username=carol -d password=carol \
//	    http://127.0.0.1:8080/realms/acme/protocol/openid-connect/token | jq -r .access_token)
//	curl -i -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8081/orders/42   # asks the gateway
//	curl -i -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8082/orders/42   # asks the gateway
//	curl -i -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8082/orders/42   # from 8082's cache
//	curl -i -X POST -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8081/logout
//	# now neither replica answers from its cache for that token
//
// When Redis is unreachable, slow or restarting, the replicas keep
// serving: every decision is asked of the gateway until Redis is back,
// then each purges its cache and caches again. Nothing needs restarting.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore"
)

func main() {
	gateway := flag.String("gateway", "http://127.0.0.1:8080", "access gateway (or reference server) base URL")
	realm := flag.String("realm", "acme", "realm of the callers' tokens")
	clientID := flag.String("client", "orders-api", "client whose resources and permissions are checked")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "Redis address the replicas share")
	channel := flag.String("channel", "orders-api:invalidations", "Redis channel of this service's cache purges")
	addr := flag.String("addr", "127.0.0.1:8081", "address to serve on")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	rdb := redis.NewClient(&redis.Options{Addr: *redisAddr})
	defer func() { _ = rdb.Close() }()
	client, err := newClient(*gateway, *realm, *clientID, rdb, *channel, pep.WithLogger(logger))
	if err != nil {
		logger.Error("bad configuration", "err", err)
		os.Exit(2)
	}
	defer func() { _ = client.Close() }() // ends the Redis subscription

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: routes(client), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logger.Info("orders replica listening", "url", "http://"+*addr, "redis", *redisAddr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve", "err", err)
		os.Exit(1)
	}
}

// newClient returns a replica's client: its cache purges go to, and come
// from, the other replicas through rdb's channel.
func newClient(gateway, realm, clientID string, rdb redis.UniversalClient, channel string, opts ...pep.Option) (*pep.Client, error) {
	return pep.New(gateway, realm, clientID,
		append([]pep.Option{pep.WithInvalidator(redisstore.NewInvalidator(rdb, channel))}, opts...)...)
}

// routes is the whole service. POST /logout purges the caller's token on
// every replica; a real service would also revoke it at the server (RFC
// 7009).
//
// Only a token the gateway accepts is purged here: the logout first asks
// the gateway about the token, past the cache. A token it refuses (401)
// needs no purge from this route: the client's own 401 path publishes one,
// at most once a second per token and 64 at a time, which is all that any
// protected route lets a caller with a made-up token cause; a replica
// applies it by a lookup of the token's digest, which finds nothing for a
// token it never cached and splits no other caller's requests.
func routes(c *pep.Client) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", middleware.Require(c, "orders", "read")(http.HandlerFunc(showOrder)))
	mux.HandleFunc("POST /logout", func(w http.ResponseWriter, r *http.Request) {
		token, err := middleware.BearerToken(r)
		if err != nil {
			writeError(w, http.StatusUnauthorized, "send the token to log out")
			return
		}
		// Any answer of the gateway's own (GRANT, DENY or ERROR) says it
		// accepts the token.
		d, err := c.Check(pep.WithToken(r.Context(), token), "orders", "read", pep.NoCache())
		switch {
		case err != nil:
			writeError(w, http.StatusUnauthorized, "the gateway does not accept this token")
			return
		case d.Cause != nil && !errors.Is(d.Cause, pep.ErrNotEvaluated):
			writeError(w, http.StatusServiceUnavailable, "the token cannot be checked now; retry")
			return
		}
		if err := c.Purge(r.Context(), token); err != nil {
			// Purged here; the other replicas may not have heard of it.
			writeError(w, http.StatusServiceUnavailable, "logged out here; retry to reach every replica")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func showOrder(w http.ResponseWriter, r *http.Request) {
	d, ok := middleware.DecisionFromContext(r.Context())
	cached := ok && len(d.Decisions) > 0 && d.Decisions[0].Cached
	fmt.Fprintf(w, "order %s (decision cached: %t)\n", r.PathValue("id"), cached)
}

// writeError answers in the service's error shape.
func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": http.StatusText(status), "message": message})
}
