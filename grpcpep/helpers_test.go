package grpcpep_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// serveWith is serve with extra services registered.
func serveWith(t *testing.T, svc *orders, register func(*grpc.Server), opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	ln := testkit.Must(net.Listen("tcp", "127.0.0.1:0"))(t)
	srv := grpc.NewServer(opts...)
	srv.RegisterService(svc.desc(), svc)
	register(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	conn := testkit.Must(grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials())))(t)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		<-done
	})
	return conn
}

// panickingChecker is a user's Checker with a bug.
type panickingChecker struct{}

func (panickingChecker) CheckMany(context.Context, []pep.Resource, ...pep.CallOption) (pep.Result, error) {
	panic("a user's Checker with a bug")
}

func tail(b []byte, n int) string {
	if len(b) > n {
		return "..." + string(b[len(b)-n:])
	}
	return string(b)
}
