package grpcpep_test

import (
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

const panicChildEnv = "GRPCPEP_PANIC_CHILD"

// A Func or Checker that panics (the user's bug) costs only its own call:
// grpc-go does not recover, so without the interceptor's recover one call
// would take the whole server process down. The call is refused with
// PermissionDenied, the handler does not run, the panic is logged at
// Error without the token, and the server goes on serving.
//
// The row TestInterceptorRecoverDoesNotDependOnTheLogger: the answer does
// not depend on the user's logger either: one slog handler with a bug on
// its Error path, shared by the client (which logs its fail-closed outage
// at Warn and panics there) and the interceptor (which logs the recovered
// panic), costs only that call. (The interceptor's log line used to panic
// again, outside any recover, and grpc-go ended the server.)
//
// The cases run in a child process, so that a panic that escapes fails
// this test rather than ending the test binary.
func TestPanickingUserCallbackCostsOnlyItsCall(t *testing.T) {
	if os.Getenv(panicChildEnv) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPanickingUserCallbackCostsOnlyItsCall$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), panicChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the server process died, or a case failed:\n%s", tail(out, 3000))
		require.Contains(t, string(out), "--- PASS: TestPanickingUserCallbackCostsOnlyItsCall")
		return
	}
	env := adaptertest.Start(t)
	buggyFunc := func(full string) (string, []string) {
		return strings.Split(full, "/")[5], []string{"read"} // out of range
	}
	buggyLogger := slog.New(testkit.WarnPanics{})
	// The gateway is down: the client fails closed and logs it at Warn.
	down, err := hangguard.NewPep("http://127.0.0.1:1", adaptertest.Realm, adaptertest.ClientID,
		pep.WithRetry(0, time.Millisecond, time.Millisecond), pep.WithLogger(buggyLogger))
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	tests := []struct {
		name    string
		checker grpcpep.Checker
		fn      grpcpep.Func
		logger  *slog.Logger // nil: a text logger whose lines the row reads
	}{
		{"Func", env.Client, buggyFunc, nil},
		{"Checker", panickingChecker{}, grpcpep.Map(rules()), nil},
		{"TestInterceptorRecoverDoesNotDependOnTheLogger", down, grpcpep.Map(rules()), buggyLogger},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "/unary", true: "/stream"}[stream], func(t *testing.T) {
				logs := &testkit.SyncBuffer{}
				logger := tt.logger
				if logger == nil {
					logger = slog.New(slog.NewTextHandler(logs, nil))
				}
				opts := []grpcpep.Option{grpcpep.WithLogger(logger), grpcpep.WithPublicMethods(grpcpep.HealthMethods...)}
				svc := &orders{}
				conn := serveWith(t, svc, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, health.NewServer()) },
					grpc.ChainUnaryInterceptor(grpcpep.UnaryServerInterceptor(tt.checker, tt.fn, opts...)),
					grpc.ChainStreamInterceptor(grpcpep.StreamServerInterceptor(tt.checker, tt.fn, opts...)))
				_, err := call(bearer(t.Context(), env.Tokens["ann"]), conn, adaptertest.OpRead, stream)
				require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
				assert.Zero(t, svc.ran.Load(), "the handler never runs")
				if tt.logger == nil {
					assert.Contains(t, logs.String(), "level=ERROR")
					assert.Contains(t, logs.String(), method(adaptertest.OpRead, stream))
					assert.NotContains(t, logs.String(), env.Tokens["ann"])
				}
				testkit.Must(healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{}))(t, "the server is still up")
			})
		}
	}
}
