// Command mockserver runs the reference server of the Organization and
// Authorization Service on a local port:
//
//	go run ./mockserver/cmd/mockserver -addr 127.0.0.1:8080 -fixture examples/fixtures/acme.json
//
// Flags: -addr (default 127.0.0.1:8080), -fixture (a JSON fixture),
// -issuer (the public base URL written into tokens, default http://<addr>),
// -admin-secret (the secret of the master realm's platform-admin client;
// generated and printed once when not given). It logs with log/slog to
// standard error, prints its base URL on standard output, and shuts down
// cleanly on SIGINT or SIGTERM.
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
	"syscall"
	"time"

	"github.com/orgauthz/orgauthz/mockserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "mockserver:", err)
		}
		stop()
		os.Exit(2)
	}
}

// shutdownTimeout bounds how long in-flight requests may finish on shutdown.
const shutdownTimeout = 10 * time.Second

// run serves until ctx is done, then shuts the server down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mockserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	fixture := fs.String("fixture", "", "JSON fixture file to seed the server with (optional)")
	issuer := fs.String("issuer", "", "public base URL written into tokens (default http://<addr>)")
	adminSecret := fs.String("admin-secret", "", "secret of the master realm's platform-admin client (default: generated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	base := *issuer
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	opts := []mockserver.Option{mockserver.WithIssuer(base), mockserver.WithLogger(logger), mockserver.WithAdminSecret(*adminSecret)}
	if *fixture != "" {
		opts = append(opts, mockserver.WithFixtureFile(*fixture))
	}
	srv, err := mockserver.New(opts...)
	if err != nil {
		return err
	}

	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "mockserver listening on %s\n", base)
	if *adminSecret == "" {
		fmt.Fprintf(stdout, "platform-admin client secret (master realm): %s\n", srv.AdminSecret())
	}
	logger.Info("mockserver started", "addr", ln.Addr().String(), "issuer", base, "fixture", *fixture)

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
