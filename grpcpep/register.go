package grpcpep

import (
	"errors"
	"fmt"

	"google.golang.org/grpc"

	"github.com/orgauthz/orgauthz/internal/safego"
)

// CheckServiceDesc returns an error naming every stream of sd that no
// interceptor would guard: grpc-go (v1.85) runs the handler of a
// grpc.StreamDesc with neither ServerStreams nor ClientStreams set as a
// unary call, past the stream interceptor, and the unary interceptor is
// only called for a grpc.MethodDesc, so such a method's handler runs with
// no decision at all. protoc-gen-go-grpc never makes such a descriptor; a
// hand-written one (a proxy's, a test's) may. A nil sd is an error too.
//
// grpc.Server.GetServiceInfo cannot tell such a stream from a unary
// method, so the check is made on the descriptors as they are registered:
// use CheckedRegistrar, or call CheckServiceDesc before RegisterService.
func CheckServiceDesc(sd *grpc.ServiceDesc) error {
	if sd == nil {
		return errors.New("grpcpep: the service descriptor is nil")
	}
	var errs []error
	for _, st := range sd.Streams {
		if !st.ServerStreams && !st.ClientStreams {
			errs = append(errs, fmt.Errorf("grpcpep: the stream /%s/%s sets neither ServerStreams nor ClientStreams: "+
				"grpc-go would run it past both interceptors; set the flags of its kind, or make it a MethodDesc", sd.ServiceName, st.StreamName))
		}
	}
	return errors.Join(errs...)
}

// CheckedRegistrar returns a grpc.ServiceRegistrar that registers services
// with r after CheckServiceDesc: a descriptor that fails the check is a
// wiring mistake, and RegisterService panics with the check's error before
// registering anything (as grpc.Server's own RegisterService stops the
// process on its own wiring mistakes). Pass it where generated code takes
// a registrar:
//
//	reg := grpcpep.CheckedRegistrar(srv)
//	orderspb.RegisterOrdersServer(reg, impl)
//
// A nil r panics at once.
func CheckedRegistrar(r grpc.ServiceRegistrar) grpc.ServiceRegistrar {
	if safego.IsNil(r) {
		panic("grpcpep: CheckedRegistrar needs a grpc.ServiceRegistrar, not nil")
	}
	return checkedRegistrar{r: r}
}

type checkedRegistrar struct{ r grpc.ServiceRegistrar }

// RegisterService checks sd, then registers it with the wrapped registrar.
func (c checkedRegistrar) RegisterService(sd *grpc.ServiceDesc, impl any) {
	if err := CheckServiceDesc(sd); err != nil {
		panic(err.Error())
	}
	c.r.RegisterService(sd, impl)
}
