package grpcpep_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// The test service, registered by hand (no protoc): for each operation of
// the shared table a unary method and a bidirectional stream, with
// wrapperspb.StringValue messages.
const service = "orders.v1.Orders"

// method is the full method name of an operation's unary method (stream
// false) or stream.
func method(op string, stream bool) string {
	if stream {
		return "/" + service + "/Stream" + op
	}
	return "/" + service + "/" + op
}

// rules is the map form of the shared table's Operations: both methods of
// read and write, nothing for unmapped.
func rules() map[string]grpcpep.Rule {
	m := map[string]grpcpep.Rule{}
	for op, res := range adaptertest.Operations {
		for _, stream := range []bool{false, true} {
			m[method(op, stream)] = grpcpep.Rule{Resource: res.Name, Scopes: res.Scopes}
		}
	}
	return m
}

// orders is the service's implementation: it counts the handlers that ran
// and answers adaptertest.Ran and the operation to every message.
type orders struct {
	ran atomic.Int32
}

var errNoDecision = errors.New("the handler ran without a decision in its context")

func (o *orders) desc() *grpc.ServiceDesc {
	sd := &grpc.ServiceDesc{ServiceName: service, HandlerType: (*any)(nil)}
	for _, op := range []string{adaptertest.OpRead, adaptertest.OpWrite, adaptertest.OpUnmapped} {
		full := method(op, false)
		sd.Methods = append(sd.Methods, grpc.MethodDesc{
			MethodName: op,
			Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
				in := new(wrapperspb.StringValue)
				if err := dec(in); err != nil {
					return nil, err
				}
				h := func(ctx context.Context, _ any) (any, error) {
					o.ran.Add(1)
					if _, ok := grpcpep.DecisionFromContext(ctx); !ok {
						return nil, errNoDecision
					}
					return wrapperspb.String(adaptertest.Ran + op), nil
				}
				if ic == nil {
					return h(ctx, in)
				}
				return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, h)
			},
		})
		sd.Streams = append(sd.Streams, grpc.StreamDesc{
			StreamName: "Stream" + op, ServerStreams: true, ClientStreams: true,
			Handler: func(_ any, ss grpc.ServerStream) error {
				o.ran.Add(1)
				if _, ok := grpcpep.DecisionFromContext(ss.Context()); !ok {
					return errNoDecision
				}
				for {
					in := new(wrapperspb.StringValue)
					if err := ss.RecvMsg(in); errors.Is(err, io.EOF) {
						return nil
					} else if err != nil {
						return err
					}
					if err := ss.SendMsg(wrapperspb.String(adaptertest.Ran + op)); err != nil {
						return err
					}
				}
			},
		})
	}
	return sd
}

// serve runs the test service on a loopback port with opts and returns a
// grpc-go client connection to it; both end with t.
func serve(t *testing.T, svc *orders, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	ln := testkit.Must(net.Listen("tcp", "127.0.0.1:0"))(t)
	srv := grpc.NewServer(opts...)
	srv.RegisterService(svc.desc(), svc)
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

// guarded returns the server options of both interceptors on c.
func guarded(c grpcpep.Checker, opts ...grpcpep.Option) []grpc.ServerOption {
	fn := grpcpep.Map(rules())
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(grpcpep.UnaryServerInterceptor(c, fn, opts...)),
		grpc.ChainStreamInterceptor(grpcpep.StreamServerInterceptor(c, fn, opts...)),
	}
}

// call makes one call of op: a unary call, or a stream that sends one
// message, closes its side and reads the answer and the end of the stream.
// It returns the answer and the call's error.
func call(ctx context.Context, conn *grpc.ClientConn, op string, stream bool) (string, error) {
	if !stream {
		out := new(wrapperspb.StringValue)
		err := conn.Invoke(ctx, method(op, false), wrapperspb.String("hello"), out)
		return out.GetValue(), err
	}
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method(op, true))
	if err != nil {
		return "", err
	}
	if err := cs.SendMsg(wrapperspb.String("hello")); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if err := cs.CloseSend(); err != nil {
		return "", err
	}
	out := new(wrapperspb.StringValue)
	if err := cs.RecvMsg(out); err != nil {
		return "", err
	}
	if err := cs.RecvMsg(new(wrapperspb.StringValue)); !errors.Is(err, io.EOF) {
		return out.GetValue(), err
	}
	return out.GetValue(), nil
}
