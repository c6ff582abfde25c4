package grpcpep_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// spy is a Checker that passes each call on and reports, on done, what the
// call's context and result were.
type spy struct {
	grpcpep.Checker
	entered chan struct{}
	done    chan spied
}

type spied struct {
	hasDeadline bool
	ctxErr      error
	res         pep.Result
}

func newSpy(c grpcpep.Checker) *spy {
	return &spy{Checker: c, entered: make(chan struct{}, 1), done: make(chan spied, 1)}
}

func (s *spy) CheckMany(ctx context.Context, resources []pep.Resource, opts ...pep.CallOption) (pep.Result, error) {
	_, hasDeadline := ctx.Deadline()
	s.entered <- struct{}{}
	res, err := s.Checker.CheckMany(ctx, resources, opts...)
	s.done <- spied{hasDeadline: hasDeadline, ctxErr: ctx.Err(), res: res}
	return res, err
}

// slowGateway is a reference server whose decisions take a minute, and a
// client of it whose own timeout is longer still: only the caller's
// deadline or cancellation can end a decision call early.
func slowGateway(t *testing.T) (*pep.Client, map[string]string) {
	t.Helper()
	gw := mockservertest.Start(t, mockserver.WithFixture(adaptertest.Fixture), adaptertest.ES256Tokens)
	gw.SetFaults(mockservertest.Faults{DecisionLatency: time.Minute})
	client := testkit.Must(hangguard.NewPep(gw.URL, adaptertest.Realm, adaptertest.ClientID,
		pep.WithTimeout(2*time.Minute), pep.WithRetry(0, time.Millisecond, time.Millisecond)))(t)
	t.Cleanup(func() { _ = client.Close() })
	return client, map[string]string{"ann": gw.Token(adaptertest.Realm, "ann")}
}

func bearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// The caller's deadline bounds the decision call: the gateway is slow, the
// caller gives up, and the decision call, which carries the caller's
// deadline, ends with the caller's context, failing closed; the handler
// never runs.
func TestCallerDeadlineBoundsTheDecision(t *testing.T) {
	t.Parallel()
	client, tokens := slowGateway(t)
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			sp := newSpy(client)
			svc := &orders{}
			conn := serve(t, svc, guarded(sp)...)
			// A call without a token connects the client (it never reaches
			// the Checker), so that the deadline below is spent on the
			// decision, not on dialing: a call that gave up before it was
			// sent would never reach the spy.
			_, err := call(t.Context(), conn, adaptertest.OpRead, stream)
			require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
			// The deadline must pass after the call reaches the server
			// (a call that gave up before it was sent never reaches the
			// spy) and before the gateway's minute. 200 ms, as it was, is
			// a stall that a loaded 2-core machine makes under -race
			// (400 ms calls of the fault suite ran out beside a CPU hog);
			// 3 s leaves room and costs 3 s.
			ctx, cancel := context.WithTimeout(bearer(t.Context(), tokens["ann"]), 3*time.Second)
			defer cancel()
			_, err = call(ctx, conn, adaptertest.OpRead, stream)
			require.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
			var got spied
			select {
			case got = <-sp.done:
			case <-time.After(time.Minute): // a hang guard, not a threshold
				t.Fatal("the call never reached the decision: it gave up before it was sent")
			}
			assert.True(t, got.hasDeadline, "the decision call carries the caller's deadline")
			// Ended by the caller: its deadline, or the cancellation its
			// client sends when the deadline passes, whichever the server
			// meets first.
			require.Error(t, got.ctxErr)
			assert.False(t, got.res.Allowed())
			assert.Zero(t, svc.ran.Load())
		})
	}
}

// A stream the caller cancels while its decision is under way is never
// decided: the decision call ends with the cancellation, and the handler
// never runs.
func TestCancelledStreamIsNotDecided(t *testing.T) {
	t.Parallel()
	client, tokens := slowGateway(t)
	sp := newSpy(client)
	svc := &orders{}
	conn := serve(t, svc, guarded(sp)...)
	ctx, cancel := context.WithCancel(bearer(t.Context(), tokens["ann"]))
	defer cancel()
	cs := testkit.Must(conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method(adaptertest.OpRead, true)))(t)
	<-sp.entered
	cancel()
	got := <-sp.done
	require.ErrorIs(t, got.ctxErr, context.Canceled)
	assert.False(t, got.res.Allowed())
	require.Equal(t, codes.Canceled, status.Code(cs.RecvMsg(new(wrapperspb.StringValue))))
	assert.Zero(t, svc.ran.Load())
}

// A granted stream carries many messages both ways, decided once.
func TestGrantedStreamCarriesMessages(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	checker := &adaptertest.Counter{Checker: env.Client}
	svc := &orders{}
	conn := serve(t, svc, guarded(checker)...)
	cs := testkit.Must(conn.NewStream(bearer(t.Context(), env.Tokens["ann"]),
		&grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method(adaptertest.OpRead, true)))(t)
	for range 3 {
		require.NoError(t, cs.SendMsg(wrapperspb.String("hello")))
		out := new(wrapperspb.StringValue)
		require.NoError(t, cs.RecvMsg(out))
		assert.Equal(t, adaptertest.Ran+adaptertest.OpRead, out.GetValue())
	}
	require.NoError(t, cs.CloseSend())
	require.ErrorIs(t, cs.RecvMsg(new(wrapperspb.StringValue)), io.EOF)
	assert.Equal(t, int64(1), checker.Calls())
}

// A method no service registers: gRPC answers Unimplemented before any
// interceptor; with an UnknownServiceHandler the stream interceptor guards
// it, and Map names nothing for it.
func TestUnknownMethods(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	anything := func(any, grpc.ServerStream) error { return nil }
	tests := []struct {
		name    string
		unknown bool
		auth    bool
		want    codes.Code
	}{
		{"gRPC's own answer", false, true, codes.Unimplemented},
		{"an unknown-service handler is guarded", true, true, codes.PermissionDenied},
		{"an unknown-service handler wants a token first", true, false, codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checker := &adaptertest.Counter{Checker: env.Client}
			opts := guarded(checker)
			if tt.unknown {
				opts = append(opts, grpc.UnknownServiceHandler(anything))
			}
			conn := serve(t, &orders{}, opts...)
			ctx := t.Context()
			if tt.auth {
				ctx = bearer(ctx, env.Tokens["ann"])
			}
			for _, m := range []string{"/" + service + "/Nope", "/no.Such/Service", "/" + service + "/" + adaptertest.OpRead + "/x"} {
				err := conn.Invoke(ctx, m, wrapperspb.String("hello"), new(wrapperspb.StringValue))
				assert.Equal(t, tt.want, status.Code(err), "%s: %v", m, err)
			}
			assert.Zero(t, checker.Calls())
		})
	}
}

// Odd metadata only gRPC has: a binary authorization-bin value is no
// authorization value; a key sent in capitals is the same key.
func TestOddMetadata(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	conn := serve(t, &orders{}, guarded(env.Client)...)
	tests := []struct {
		name string
		md   metadata.MD
		want codes.Code
	}{
		{"a binary authorization-bin value", metadata.Pairs("authorization-bin", "Bearer "+env.Tokens["ann"]), codes.Unauthenticated},
		{"the key in capitals", metadata.Pairs("Authorization", "Bearer "+env.Tokens["ann"]), codes.OK},
		{"authorization and authorization-bin", metadata.Pairs("authorization", "Bearer "+env.Tokens["ann"], "authorization-bin", "x"), codes.OK},
		{"the token under another key", metadata.Pairs("x-authorization", "Bearer "+env.Tokens["ann"]), codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := call(metadata.NewOutgoingContext(t.Context(), tt.md), conn, adaptertest.OpRead, false)
			assert.Equal(t, tt.want, status.Code(err), "%v", err)
		})
	}
}

// The decision context is the call as HTTP/2 carries it: POST and the full
// method name. A permission the fixture grants for GET only is refused; one
// for POST is granted.
func TestDecisionContextIsPOSTAndTheMethod(t *testing.T) {
	t.Parallel()
	fx := mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:  "r",
		Roles: []mockserver.FixtureRole{{Name: "viewer"}},
		Users: []mockserver.FixtureUser{{Username: "ann", Roles: []string{"viewer"}}},
		Clients: []mockserver.FixtureClient{{
			ClientID: "api", Secret: "s",
			Resources: []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read", "write"}}},
			Permissions: []mockserver.FixturePermission{
				{Name: "read by GET", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}, Methods: []string{"GET"}},
				{Name: "write by POST", Resource: "orders", Scopes: []string{"write"}, Roles: []string{"viewer"}, Methods: []string{"POST"}},
			},
		}},
	}}}
	gw := mockservertest.Start(t, mockserver.WithFixture(fx), adaptertest.ES256Tokens)
	client := testkit.Must(hangguard.NewPep(gw.URL, "r", "api"))(t)
	t.Cleanup(func() { _ = client.Close() })
	conn := serve(t, &orders{}, guarded(client)...)
	ctx := bearer(t.Context(), gw.Token("r", "ann"))
	_, err := call(ctx, conn, adaptertest.OpRead, false)
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "read is granted for GET only")
	_, err = call(ctx, conn, adaptertest.OpWrite, false)
	assert.Equal(t, codes.OK, status.Code(err), "write is granted for POST: %v", err)
}

// fixed is a Checker that answers with a fixed result and error.
type fixed struct {
	res pep.Result
	err error
}

func (f fixed) CheckMany(context.Context, []pep.Resource, ...pep.CallOption) (pep.Result, error) {
	return f.res, f.err
}

func deny(cause error) pep.Result {
	return pep.Result{Status: pep.Deny, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: pep.Deny, Cause: cause}}}
}

// The answers middleware.Classify gives, as codes, with and without the
// options (an outage and a refused caller token without them are
// TestAdapterTable's rows).
func TestAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		checker grpcpep.Checker
		opts    []grpcpep.Option
		auth    bool
		want    codes.Code
	}{
		{"WithUnavailableCode hides an outage", fixed{res: deny(pep.ErrUnavailable)}, []grpcpep.Option{grpcpep.WithUnavailableCode(codes.PermissionDenied)}, true, codes.PermissionDenied},
		{"a plain denial is not an outage", fixed{res: deny(nil)}, []grpcpep.Option{grpcpep.WithUnavailableCode(codes.Aborted)}, true, codes.PermissionDenied},
		{"an unforeseen error is no decision, never Internal", fixed{err: errors.New("pep: something new")}, nil, true, codes.Unavailable},
		{"the zero result is denied", fixed{}, nil, true, codes.PermissionDenied},
		{"a closed client is an outage", fixed{res: deny(pep.ErrClosed), err: pep.ErrClosed}, nil, true, codes.Unavailable},
		{"WithClientToken checks a call without metadata", fixed{res: pep.Result{Status: pep.Grant, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: pep.Grant}}}},
			[]grpcpep.Option{grpcpep.WithClientToken()}, false, codes.OK},
		{"WithClientToken: a refused client token is the service's outage", fixed{err: pep.ErrUnauthorized}, []grpcpep.Option{grpcpep.WithClientToken()}, true, codes.Unavailable},
		{"WithClientToken: no client token is the service's outage", fixed{err: pep.ErrNoToken}, []grpcpep.Option{grpcpep.WithClientToken()}, false, codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := &orders{}
			conn := serve(t, svc, guarded(tt.checker, tt.opts...)...)
			ctx := t.Context()
			if tt.auth {
				ctx = bearer(ctx, "tok")
			}
			for _, stream := range []bool{false, true} {
				_, err := call(ctx, conn, adaptertest.OpRead, stream)
				assert.Equal(t, tt.want, status.Code(err), "stream %v: %v", stream, err)
			}
		})
	}
}

// Wiring mistakes panic when the interceptor or the map is built, saying
// what to fix.
func TestWiringMistakesPanic(t *testing.T) {
	t.Parallel()
	fn := grpcpep.Map(rules())
	var nilClient *pep.Client
	tests := []adaptertest.Mistake{
		{Name: "nil checker", Build: func() { grpcpep.UnaryServerInterceptor(nil, fn) }, Says: "the Checker is nil"},
		{Name: "typed nil checker", Build: func() { grpcpep.StreamServerInterceptor(nilClient, fn) }, Says: "the Checker is nil"},
		{Name: "nil func", Build: func() { grpcpep.UnaryServerInterceptor(fixed{}, nil) }, Says: "the Func is nil"},
		{Name: "nil option", Build: func() { grpcpep.StreamServerInterceptor(fixed{}, fn, nil) }, Says: "an Option is nil"},
		{Name: "OK as the outage code", Build: func() { grpcpep.UnaryServerInterceptor(fixed{}, fn, grpcpep.WithUnavailableCode(codes.OK)) }, Says: "other than OK"},
		{Name: "an undefined code", Build: func() { grpcpep.UnaryServerInterceptor(fixed{}, fn, grpcpep.WithUnavailableCode(codes.Code(99))) }, Says: "one gRPC defines"},
		{Name: "a key without a slash", Build: func() { grpcpep.Map(map[string]grpcpep.Rule{"orders.v1.Orders/Read": {"orders", []string{"read"}}}) }, Says: "not a full method name"},
		{Name: "a key without a method", Build: func() { grpcpep.Map(map[string]grpcpep.Rule{"/orders.v1.Orders/": {"orders", []string{"read"}}}) }, Says: "not a full method name"},
		{Name: "a wildcard resource", Build: func() { grpcpep.Map(map[string]grpcpep.Rule{"/s.S/M": {"*", []string{"read"}}}) }, Says: "a resource other than"},
		{Name: "no scope", Build: func() { grpcpep.Map(map[string]grpcpep.Rule{"/s.S/M": {"orders", nil}}) }, Says: "at least one scope"},
		{Name: "an empty scope", Build: func() { grpcpep.Map(map[string]grpcpep.Rule{"/s.S/M": {"orders", []string{"read", ""}}}) }, Says: "none of them empty"},
		{Name: "a zero redecide interval", Build: func() { grpcpep.StreamServerInterceptor(fixed{}, fn, grpcpep.WithStreamRedecide(0)) }, Says: "grpcpep: WithStreamRedecide needs an interval of at least 1s, got 0s"},
		{Name: "a negative redecide interval", Build: func() { grpcpep.StreamServerInterceptor(fixed{}, fn, grpcpep.WithStreamRedecide(-time.Second)) }, Says: "grpcpep: WithStreamRedecide needs an interval of at least 1s, got -1s"},
		// Every message of a stream would be a gateway request past the
		// client's cache (F3's rule: the load an option makes is bounded).
		{Name: "a redecide interval that decides every message", Build: func() { grpcpep.StreamServerInterceptor(fixed{}, fn, grpcpep.WithStreamRedecide(time.Nanosecond)) }, Says: "grpcpep: WithStreamRedecide needs an interval of at least 1s, got 1ns"},
	}
	// TestMapRefusesNamesNotValidUTF8 (a-dpop9 F2): a rule whose names
	// JSON cannot carry as written is a wiring mistake, as an empty one is.
	for _, r := range []grpcpep.Rule{{Resource: "orders\xff", Scopes: []string{"read"}}, {Resource: "orders", Scopes: []string{"\xfe"}}} {
		tests = append(tests, adaptertest.Mistake{Name: fmt.Sprintf("TestMapRefusesNamesNotValidUTF8 %q %q", r.Resource, r.Scopes), Build: func() { grpcpep.Map(map[string]grpcpep.Rule{"/s.S/M": r}) },
			Says: `grpcpep: Map's rule for "/s.S/M" needs a resource other than "" and "*" and at least one scope, none of them empty, all valid UTF-8`})
	}
	// WithPublicMethods takes exact full method names only: a prefix, a
	// service name or a pattern is a wiring mistake.
	for _, name := range []string{"", "/grpc.health.v1.Health", "/grpc.health.v1.Health/", "grpc.health.v1.Health/Check", "/grpc.health.v1.Health/*/x"} {
		tests = append(tests, adaptertest.Mistake{Name: "a public method " + name, Build: func() { grpcpep.UnaryServerInterceptor(fixed{}, fn, grpcpep.WithPublicMethods(name)) },
			Says: "grpcpep: WithPublicMethods was given " + `"` + name + `"` + `, which is not a full method name "/package.Service/Method" (exact names only, no prefixes)`})
	}
	adaptertest.RunMistakes(t, tests)
	assert.NotPanics(t, func() {
		grpcpep.Map(map[string]grpcpep.Rule{"/s.S/M": {Resource: "bestellungen-ü", Scopes: []string{"\uFFFD"}}})
	})
}

// Map copies its map: a later change to it changes nothing.
func TestMapCopies(t *testing.T) {
	t.Parallel()
	m := map[string]grpcpep.Rule{"/s.S/M": {Resource: "orders", Scopes: []string{"read"}}}
	fn := grpcpep.Map(m)
	m["/s.S/M"].Scopes[0] = "write"
	m["/s.S/N"] = grpcpep.Rule{Resource: "orders", Scopes: []string{"read"}}
	res, scopes := fn("/s.S/M")
	assert.Equal(t, "orders", res)
	assert.Equal(t, []string{"read"}, scopes)
	scopes[0] = "mutated"
	_, again := fn("/s.S/M")
	assert.Equal(t, []string{"read"}, again)
	res, _ = fn("/s.S/N")
	assert.Empty(t, res)
}
