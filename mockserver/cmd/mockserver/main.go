// Command mockserver runs the reference server of the Organization and
// Authorization Service on a local port:
//
//	go run ./mockserver/cmd/mockserver -addr 127.0.0.1:8080 -fixture examples/fixtures/acme.json
//
// Flags: -addr (default 127.0.0.1:8080), -fixture (a JSON fixture),
// -issuer (the public base URL written into tokens; without it each
// request's own URL is the public one), -trusted-proxy (addresses or
// networks, repeatable or comma-separated, of reverse proxies whose
// X-Forwarded-Proto/-Host/-Port and Forwarded headers give the public URL
// when -issuer is not set; never read from other peers), -admin-secret (the
// secret of the master realm's platform-admin client; generated and printed
// once when not given), -access-token-alg (RS256, the default, as Keycloak
// signs access tokens, or ES256), -cors-origin (origins, repeatable or
// comma-separated, that browsers may call every realm from, beside each
// fixture client's webOrigins; "*" for any), -webui (serve the web UI at
// /ui/, for users holding realm management; off by default), -read-header-timeout (10s), -read-timeout (30s,
// headers and body together) and -idle-timeout (2m), which bound how long a
// client may hold a connection without sending its request, -write-timeout
// (90s), which bounds how long a client may take to read its answer, and
// -max-connections (1024), the number of connections served at once,
// shared between peer addresses: at the limit a newcomer takes the slot of
// an idle keep-alive connection, else of a silent one (nothing sent) of
// its own address or of an address holding at least two more connections
// than its own, each only once the server has waited five seconds for its
// request and none came, else of the request in progress longest of an
// address holding at least two more (each from the address holding the
// most); otherwise it waits, without holding up other addresses'
// newcomers. Replicas behind one front (a load balancer) act as one with
// -key-seed (at least 16 bytes: every realm's signing keys, and the ids of
// what the fixture holds, derive from it, so a token of one replica
// verifies at every other; give them the same -fixture and -admin-secret
// too), -redis (redis://[[user]:password@]host[:port][/db]: DPoP proofs
// and revocations are recorded there, so a proof accepted by one replica
// is a replay at every other and a token of one is served by every other,
// which without -redis serves only its own; while Redis fails, requests
// with proofs or tokens get 503) with
// -redis-prefix (its key prefix, default orgauthz:mockserver:dpop:), and
// -nonce-secret (at least 32 bytes: DPoP nonces, when the configuration
// requires them, are accepted by every replica holding the secret). It
// logs with
// log/slog to standard error, prints its base URL on standard output, and
// shuts down cleanly on SIGINT or SIGTERM. -h prints a description, an
// example and the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/internal/redisreplay"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(report(err, os.Stderr))
}

// report writes err to stderr as one line prefixed once with "mockserver:"
// and returns the exit status: 0 for nil or a help request, 2 otherwise.
func report(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "mockserver: ") { // the library's errors carry it already
		msg = "mockserver: " + msg
	}
	fmt.Fprintln(stderr, msg)
	return 2
}

// usageHead is what -h prints before the flags.
const usageHead = `mockserver runs the reference server of the Organization and Authorization
Service in memory: organizations, departments, assignments, roles, groups,
applications, templates, authorization decisions, platform administration,
an OpenID Connect token issuer (password, client_credentials and
authorization code with PKCE; Bearer and DPoP-bound tokens) and an AuthZEN 1.0
decision point, seeded from a JSON fixture.

Usage:
  mockserver [flags]

Example (from a clone of github.com/orgauthz/orgauthz):
  go run ./mockserver/cmd/mockserver -addr 127.0.0.1:8080 -fixture examples/fixtures/acme.json
  curl -s -d grant_type=password -d client_id=admin-cli -d username=alice -d password=alice \
      http://127.0.0.1:8080/realms/acme/protocol/openid-connect/token

It prints its base URL on standard output, logs to standard error, and stops
cleanly on SIGINT or SIGTERM. The package documentation of
github.com/orgauthz/orgauthz/mockserver describes what it does.

Flags:
`

// shutdownTimeout bounds how long in-flight requests may finish on shutdown.
const shutdownTimeout = 10 * time.Second

// run serves until ctx is done, then shuts the server down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mockserver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	fixture := fs.String("fixture", "", "JSON fixture file to seed the server with (optional)")
	issuer := fs.String("issuer", "", "public base URL written into tokens (default: each request's own, see -trusted-proxy)")
	var proxies []string
	fs.Func("trusted-proxy", "`address` or network (CIDR) of a reverse proxy whose X-Forwarded-* and Forwarded headers give the public URL; repeatable, comma-separated", func(v string) error {
		proxies = append(proxies, v)
		return nil
	})
	adminSecret := fs.String("admin-secret", "", "secret of the master realm's platform-admin client (default: generated)")
	accessAlg := fs.String("access-token-alg", "RS256", "signature algorithm of access tokens: RS256 (as Keycloak) or ES256")
	var corsOrigins []string
	fs.Func("cors-origin", "`origin` (scheme://host[:port], or * for any) that browsers may call every realm from, beside each client's webOrigins; repeatable, comma-separated", func(v string) error {
		for o := range strings.SplitSeq(v, ",") {
			corsOrigins = append(corsOrigins, strings.TrimSpace(o))
		}
		return nil
	})
	webUI := fs.Bool("webui", false, "serve the web UI at /ui/ (a realm's organizations, users, clients and a decision evaluator, for users holding realm management)")
	logDenials := fs.Bool("log-denials", false, "write to stderr why each decision that is not GRANT was made: the permissions that apply, the facts each matched or missed, and the subject's roles with their sources")
	readHeader := fs.Duration("read-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	read := fs.Duration("read-timeout", 30*time.Second, "how long a client may take to send a whole request, body included")
	idle := fs.Duration("idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
	// Above decisionLatencyMs's ceiling of 60 s, so that the slowest injected
	// decision still reaches its client.
	write := fs.Duration("write-timeout", 90*time.Second, "how long a client may take to read a response, from the end of its request's headers")
	keySeed := fs.String("key-seed", "", "secret (16+ bytes) every realm's signing keys, the fixture's ids and the keys of page tokens and, with -redis, of codes and UI sessions derive from, the same for every replica (default: random keys)")
	redisURL := fs.String("redis", "", "`URL` of a Redis or Valkey server (redis://[[user]:password@]host[:port][/db]) where replicas share the DPoP proofs they accepted, revocations, spent authorization codes and UI sign-outs (default: in memory)")
	redisPrefix := fs.String("redis-prefix", redisreplay.DefaultPrefix, "key prefix of the replicas' shared keys in Redis")
	nonceSecret := fs.String("nonce-secret", "", "secret (32+ bytes) of DPoP nonces that every replica holding it accepts (default: nonces of this process only)")
	maxConns := fs.Int("max-connections", 1024, "how many connections are served at once, shared between peer addresses: at the limit a newcomer takes the slot of an idle connection, else of a silent one of its address or of one holding 2 more (either only after 5s without a byte), else of the longest request in progress of an address holding 2 more; otherwise it waits")
	fs.SetOutput(io.Discard) // report prints parse errors, once
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageHead)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return err
		}
		return fmt.Errorf("%w (mockserver -h lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (mockserver -h lists the flags)", fs.Args())
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if *readHeader <= 0 || *read <= 0 || *idle <= 0 || *write <= 0 {
		return errors.New("timeouts must be positive")
	}
	if *maxConns <= 0 {
		return errors.New("-max-connections must be positive")
	}
	opts := []mockserver.Option{mockserver.WithLogger(logger), mockserver.WithAdminSecret(*adminSecret),
		mockserver.WithTrustedProxies(proxies...), mockserver.WithAccessTokenAlgorithm(*accessAlg),
		mockserver.WithCORSOrigins(corsOrigins...)}
	base := *issuer
	if base != "" {
		opts = append(opts, mockserver.WithIssuer(base))
	} else {
		base = "http://" + ln.Addr().String() // what to print; tokens follow each request's URL
	}
	if *fixture != "" {
		opts = append(opts, mockserver.WithFixtureFile(*fixture))
	}
	if *webUI {
		opts = append(opts, mockserver.WithWebUI())
	}
	if *logDenials {
		var mu sync.Mutex // one explanation at a time, never interleaved
		opts = append(opts, mockserver.WithDenialLog(func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, format+"\n", args...)
		}))
	}
	shared, closeShared, err := replicaOptions(*keySeed, *redisURL, *redisPrefix, *nonceSecret)
	if err != nil {
		return err
	}
	defer closeShared()
	opts = append(opts, shared...)
	srv, err := mockserver.New(opts...)
	if err != nil {
		return err
	}

	limited := newLimitListener(ln, *maxConns)
	hs := &http.Server{
		Handler:           srv,
		ConnState:         limited.track,
		ReadHeaderTimeout: *readHeader,
		ReadTimeout:       *read, // bounds the body too: a client that never sends it loses the connection
		IdleTimeout:       *idle,
		// A client that never reads its answer would otherwise hold the
		// answer's memory and its connection for ever.
		WriteTimeout: *write,
		ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	// The cap bounds what clients that hold connections (and the answers
	// written to them) can pin at once; the slots are shared between peer
	// addresses (limitListener).
	go func() { served <- hs.Serve(limited) }()
	fmt.Fprintf(stdout, "mockserver listening on %s\n", base)
	if *adminSecret == "" {
		fmt.Fprintf(stdout, "platform-admin client secret (master realm): %s\n", srv.AdminSecret())
	}
	if *webUI {
		fmt.Fprintf(stdout, "web UI: %s/ui/\n", base)
	}
	logger.Info("mockserver started", "addr", ln.Addr().String(), "issuer", *issuer, "trustedProxies", proxies, "fixture", *fixture,
		"accessTokenAlg", *accessAlg, "corsOrigins", corsOrigins, "webUI", *webUI,
		"keySeed", *keySeed != "", "redis", redactedURL(*redisURL), "nonceSecret", *nonceSecret != "")

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("mockserver shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
