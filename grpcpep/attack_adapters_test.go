package grpcpep_test

// Attack reproductions (branch a-adapters). Each test asserts the behaviour
// the package documentation promises or a user would need; a failure is a
// finding.

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/mockserver"
)

const attackChildEnv = "GRPCPEP_ATTACK_CHILD"

// A Func that panics (a user's Func indexing the method name, say) is run
// by the interceptor without a recover; grpc-go does not recover handler
// panics, so one call takes the whole server process down, every other
// caller with it. The same Func under middleware.RequireFunc costs one
// request (net/http recovers it). The child process serves the panicking
// Func and makes one call; the parent checks that it survived.
func TestAttackFuncPanicKillsTheServer(t *testing.T) {
	if os.Getenv(attackChildEnv) == "1" {
		env := adaptertest.Start(t)
		fn := func(full string) (string, []string) {
			parts := strings.Split(full, "/")
			return parts[5], []string{"read"} // a user's bug: out of range
		}
		svc := &orders{}
		conn := serve(t, svc,
			grpc.ChainUnaryInterceptor(grpcpep.UnaryServerInterceptor(env.Client, fn)))
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+env.Tokens["ann"])
		_, err := call(ctx, conn, adaptertest.OpRead, false)
		t.Logf("SURVIVED: the call ended with %v", status.Code(err))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAttackFuncPanicKillsTheServer$", "-test.v")
	cmd.Env = append(os.Environ(), attackChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the server process died on one call whose Func panicked:\n%s", tail(out, 1500))
	require.Contains(t, string(out), "SURVIVED")
}

func tail(b []byte, n int) string {
	if len(b) > n {
		return "..." + string(b[len(b)-n:])
	}
	return string(b)
}

// The README's wiring on a server that also serves grpc.health.v1 (as any
// Kubernetes gRPC probe needs): the probe, which carries no token, gets
// Unauthenticated, and neither Map nor Func can exempt a method (a Func
// naming nothing is PermissionDenied). Deploying the documented snippet
// makes every liveness/readiness probe fail: a lock-out of the whole
// service by its orchestrator. The user must hand-write a wrapper
// interceptor that skips methods, outside the package's guarantees.
func TestAttackHealthProbeIsLockedOut(t *testing.T) {
	env := adaptertest.Start(t)
	svc := &orders{}
	hs := health.NewServer()
	opts := guarded(env.Client)
	conn := serveWith(t, svc, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) }, opts...)
	_, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err, "a health probe (no token) is refused: %v", status.Convert(err))
}

// A stream is decided once: a server stream authorized with a token that
// expires a second later keeps serving messages for as long as the client
// holds it open (hours, for a Tail/Watch), past the token's expiry and past
// any revocation. Documented ("decided once"), but nothing bounds the
// grant's life (no re-check, no cut-off at the token's exp).
func TestAttackStreamOutlivesItsToken(t *testing.T) {
	env := adaptertest.Start(t)
	short := env.Gateway.Token(adaptertest.Realm, "ann", mockserver.TokenLifetime(time.Second))
	svc := &orders{}
	conn := serve(t, svc, guarded(env.Client)...)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+short)
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method(adaptertest.OpRead, true))
	require.NoError(t, err)
	ping := func() error {
		if err := cs.SendMsg(wrapperspb.String("x")); err != nil {
			return err
		}
		return cs.RecvMsg(new(wrapperspb.StringValue))
	}
	require.NoError(t, ping())
	time.Sleep(2500 * time.Millisecond)
	// The same token on a new call is refused now...
	_, uerr := call(ctx, conn, adaptertest.OpRead, false)
	require.Equal(t, codes.Unauthenticated, status.Code(uerr), "the expired token on a new call")
	// ...but the open stream still serves.
	err = ping()
	_ = cs.CloseSend()
	require.Error(t, err, "the stream kept serving after its token expired (stale grant)")
}

// serveWith is serve with extra services registered.
func serveWith(t *testing.T, svc *orders, register func(*grpc.Server), opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(opts...)
	srv.RegisterService(svc.desc(), svc)
	register(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		<-done
	})
	return conn
}

// grpc-go 1.85 calls a registered StreamDesc with neither ServerStreams
// nor ClientStreams set directly, "as a unary RPC": the stream interceptor
// is skipped, and the unary one is never called either (only
// wrapUnaryHandler, for a MethodDesc, calls it). A hand-written or
// generated-by-other-tools ServiceDesc (a proxy's, a test's) with such a
// stream runs its handler with no decision at all, under the README's
// wiring of both interceptors.
func TestAttackStreamDescWithoutFlagsSkipsBothInterceptors(t *testing.T) {
	env := adaptertest.Start(t)
	var ran atomic.Bool
	sd := &grpc.ServiceDesc{ServiceName: "bare.v1.Bare", HandlerType: (*any)(nil), Streams: []grpc.StreamDesc{{
		StreamName: "Do",
		Handler: func(_ any, ss grpc.ServerStream) error {
			ran.Store(true)
			in := new(wrapperspb.StringValue)
			if err := ss.RecvMsg(in); err != nil {
				return err
			}
			return ss.SendMsg(wrapperspb.String("ran without a decision"))
		},
	}}}
	// Map does not name the method: every call must be PermissionDenied
	// (and this one carries no token: Unauthenticated comes first).
	conn := serveWith(t, &orders{}, func(s *grpc.Server) { s.RegisterService(sd, struct{}{}) }, guarded(env.Client)...)
	out := new(wrapperspb.StringValue)
	err := conn.Invoke(t.Context(), "/bare.v1.Bare/Do", wrapperspb.String("x"), out)
	require.False(t, ran.Load(), "the handler ran without any interceptor (answer %q, err %v)", out.GetValue(), err)
	require.Error(t, err)
}
