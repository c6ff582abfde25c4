package grpcpep_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

const loggerPanicChildEnv = "GRPCPEP_LOGGER_PANIC_CHILD"

// warnPanics is a user's slog handler with a bug on its Warn and Error
// path.
type warnPanics struct{}

func (warnPanics) Enabled(context.Context, slog.Level) bool { return true }
func (h warnPanics) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h warnPanics) WithGroup(string) slog.Handler          { return h }
func (warnPanics) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		panic("a bug in the user's log handler")
	}
	return nil
}

// The interceptors' answer to a panic under a call does not depend on the
// user's logger: one slog handler with a bug on its Error path, shared by
// the client (which logs its fail-closed outage at Warn and panics there)
// and the interceptor (which logs the recovered panic), costs only that
// call, refused PermissionDenied; the server goes on. (The interceptor's
// log line used to panic again, outside any recover, and grpc-go ended the
// server.) The cases run in a child process, so that a panic that escapes
// fails this test rather than ending the test binary.
func TestInterceptorRecoverDoesNotDependOnTheLogger(t *testing.T) {
	if os.Getenv(loggerPanicChildEnv) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestInterceptorRecoverDoesNotDependOnTheLogger$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), loggerPanicChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the server process died, or a case failed:\n%s", tail(out, 3000))
		require.Contains(t, string(out), "--- PASS: TestInterceptorRecoverDoesNotDependOnTheLogger")
		return
	}
	env := adaptertest.Start(t)
	logger := slog.New(warnPanics{})
	// The gateway is down: the client fails closed and logs it at Warn.
	down, err := hangguard.NewPep("http://127.0.0.1:1", adaptertest.Realm, adaptertest.ClientID,
		pep.WithRetry(0, time.Millisecond, time.Millisecond), pep.WithLogger(logger))
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[stream], func(t *testing.T) {
			opts := []grpcpep.Option{grpcpep.WithLogger(logger), grpcpep.WithPublicMethods(grpcpep.HealthMethods...)}
			svc := &orders{}
			conn := serveWith(t, svc, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, health.NewServer()) },
				grpc.ChainUnaryInterceptor(grpcpep.UnaryServerInterceptor(down, grpcpep.Map(rules()), opts...)),
				grpc.ChainStreamInterceptor(grpcpep.StreamServerInterceptor(down, grpcpep.Map(rules()), opts...)))
			_, err := call(bearer(t.Context(), env.Tokens["ann"]), conn, adaptertest.OpRead, stream)
			require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
			require.Zero(t, svc.ran.Load(), "the handler never runs")
			_, err = healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
			require.NoError(t, err, "the server is still up")
		})
	}
}
