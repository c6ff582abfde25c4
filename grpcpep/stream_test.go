package grpcpep_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
)

// A stream's grant has a lifetime: once it is older than the interval,
// the stream's next message is decided again, past the client's cache,
// and a stream whose token was revoked meanwhile ends with the code a new
// call gets (Unauthenticated). The guard's clock is the test's, moved
// past the interval before each message, so every message is re-decided
// and no wait is needed.
func TestStreamGrantIsDecidedAgain(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	svc := &orders{}
	clk := testkit.NewClock(time.Now())
	conn := serve(t, svc, guarded(env.Client, grpcpep.WithStreamRedecide(grpcpep.MinStreamRedecide), grpcpep.WithClock(clk.Now))...)
	token := env.Gateway.Token(adaptertest.Realm, "ann", mockserver.TokenClient(adaptertest.ClientID))
	ctx := bearer(t.Context(), token)
	cs := testkit.Must(conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method(adaptertest.OpRead, true)))(t)
	ping := func() error {
		clk.Advance(grpcpep.MinStreamRedecide)
		if err := cs.SendMsg(wrapperspb.String("x")); err != nil {
			return err
		}
		return cs.RecvMsg(new(wrapperspb.StringValue))
	}
	require.NoError(t, ping())
	require.NoError(t, ping(), "a re-decided grant lets the stream go on")

	env.Gateway.Revoke(t, adaptertest.Realm, adaptertest.ClientID, "s3cret", token)
	_, err := call(ctx, conn, adaptertest.OpRead, false)
	require.Equal(t, codes.Unauthenticated, status.Code(err), "the revoked token on a new call")
	err = ping()
	require.Equal(t, codes.Unauthenticated, status.Code(err), "the open stream kept serving its revoked token: %v", err)
}

// Within the interval a stream's messages are not decided again: one
// decision serves them all (the default interval is 30 s).
func TestStreamGrantLastsItsInterval(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	counter := &adaptertest.Counter{Checker: env.Client}
	conn := serve(t, &orders{}, guarded(counter)...)
	cs := testkit.Must(conn.NewStream(bearer(t.Context(), env.Tokens["ann"]),
		&grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method(adaptertest.OpRead, true)))(t)
	for range 5 {
		require.NoError(t, cs.SendMsg(wrapperspb.String("x")))
		require.NoError(t, cs.RecvMsg(new(wrapperspb.StringValue)))
	}
	require.NoError(t, cs.CloseSend())
	assert.Equal(t, int64(1), counter.Calls())
}

// A stream's grant lifetime counts from the gateway's decision, so a
// stream is opened on a decision asked past the client's cache: a GRANT
// an earlier stream left in the cache, of an age the cache does not tell,
// never opens one. Here the token is revoked after the first stream's
// grant was cached; the second stream, within the interval of that
// cached GRANT, is refused at once with the code a new call gets.
func TestStreamOpensOnTheGatewaysDecision(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	conn := serve(t, &orders{}, guarded(env.Client)...) // the default interval: 30 s
	token := env.Gateway.Token(adaptertest.Realm, "ann", mockserver.TokenClient(adaptertest.ClientID))
	ctx := bearer(t.Context(), token)
	ping := func(cs grpc.ClientStream) error {
		if err := cs.SendMsg(wrapperspb.String("x")); err != nil {
			return err
		}
		return cs.RecvMsg(new(wrapperspb.StringValue))
	}
	open := func() grpc.ClientStream {
		return testkit.Must(conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method(adaptertest.OpRead, true)))(t)
	}

	first := open()
	require.NoError(t, ping(first)) // granted by the gateway, and cached
	require.NoError(t, first.CloseSend())
	second := open()
	require.NoError(t, ping(second), "a stream of a token still valid")
	require.NoError(t, second.CloseSend())

	env.Gateway.Revoke(t, adaptertest.Realm, adaptertest.ClientID, "s3cret", token)
	third := open()
	err := ping(third)
	require.Equal(t, codes.Unauthenticated, status.Code(err), "a stream opened on the cached GRANT of a revoked token: %v", err)
}
