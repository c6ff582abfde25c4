package frameworks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
)

// The procedures of the README's connect-go example (no protoc: the
// messages are wrapperspb's).
const (
	getOrder    = "/orders.v1.Orders/Get"
	cancelOrder = "/orders.v1.Orders/Cancel"
)

// connectOrders is the README's connect-go example: each procedure's
// handler is an http.Handler, wrapped by Require like any other, and the
// middleware's answers reach connect clients as codes.
func connectOrders(client middleware.Checker, opts ...middleware.Option) http.Handler {
	echo := func(_ context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
		return connect.NewResponse(wrapperspb.String("order " + req.Msg.GetValue())), nil
	}
	mux := http.NewServeMux()
	mux.Handle(getOrder, middleware.Require(client, "orders", "read").With(opts...)(connect.NewUnaryHandler(getOrder, echo)))
	mux.Handle(cancelOrder, middleware.Require(client, "orders", "write").With(opts...)(connect.NewUnaryHandler(cancelOrder, echo)))
	return mux
}

func TestConnectExample(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	srv := testkit.Serve(t, connectOrders(env.Client))
	down := testkit.Serve(t, connectOrders(env.Down,
		middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second))))

	tests := []struct {
		name      string
		server    *httptest.Server
		procedure string
		auth      []string
		want      connect.Code // 0: granted
	}{
		{"a viewer gets an order", srv, getOrder, []string{"Bearer {ann}"}, 0},
		{"ben may not", srv, getOrder, []string{"Bearer {ben}"}, connect.CodePermissionDenied},
		{"nobody may cancel", srv, cancelOrder, []string{"Bearer {ann}"}, connect.CodePermissionDenied},
		{"no token", srv, getOrder, nil, connect.CodeUnauthenticated},
		{"a forged token", srv, getOrder, []string{"Bearer {forged}"}, connect.CodeUnauthenticated},
		{"the gateway is down", down, getOrder, []string{"Bearer {ann}"}, connect.CodeUnavailable},
		// The middleware's 400 is Internal to a Connect client: the
		// Connect protocol maps an HTTP 400 that is not its own to
		// Internal. grpcpep answers gRPC callers InvalidArgument.
		{"two authorization values", srv, getOrder, []string{"Bearer {ann}", "Bearer {ann}"}, connect.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](tt.server.Client(), tt.server.URL+tt.procedure)
			req := connect.NewRequest(wrapperspb.String("42"))
			for _, v := range (adaptertest.Case{Authorization: tt.auth}).Values(env.Tokens) {
				req.Header().Add("Authorization", v)
			}
			resp, err := client.CallUnary(t.Context(), req)
			if tt.want == 0 {
				require.NoError(t, err)
				assert.Equal(t, "order 42", resp.Msg.GetValue())
				return
			}
			var ce *connect.Error
			require.True(t, errors.As(err, &ce), "%v", err)
			assert.Equal(t, tt.want, ce.Code(), "%v", err)
		})
	}
}
