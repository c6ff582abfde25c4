package grpcpep_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/orgauthz/orgauthz/grpcpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// outage answers every call as the client does when no decision could be
// had, whatever the call's context.
type outage struct{}

func (outage) CheckMany(context.Context, []pep.Resource, ...pep.CallOption) (pep.Result, error) {
	return pep.Result{Status: pep.Deny, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: pep.Deny, Cause: pep.ErrUnavailable}}}, nil
}

// TestCallerWhoGaveUpGetsItsOwnCode: a decision that ended because the
// caller's deadline passed, or because the caller cancelled, ends the call
// with DeadlineExceeded or Canceled, not Unavailable: answered as an
// outage, the code raced the client's own timer for the same deadline
// (beside a CPU hog the server's Unavailable won), and a client that
// retries Unavailable would retry what it gave up on. The deadline counts
// as passed by the clock even before the context's timer has fired. Such
// a call is never decided, and its handler never runs, also when the
// client holds the caller's grant in its cache, where a decision reads no
// deadline (TestGaveUpCallerNeverReachesTheHandler: the handler of such a
// call used to run on a cached grant).
func TestCallerWhoGaveUpGetsItsOwnCode(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(adaptertest.Fixture), adaptertest.ES256Tokens)
	client := testkit.Must(hangguard.NewPep(gw.URL, adaptertest.Realm, adaptertest.ClientID))(t)
	t.Cleanup(func() { _ = client.Close() })
	cached := &counting{Checker: client}
	rules := grpcpep.Map(map[string]grpcpep.Rule{"/orders.Orders/Read": {Resource: "orders", Scopes: []string{"read"}}})
	info := &grpc.UnaryServerInfo{FullMethod: "/orders.Orders/Read"}
	withToken := func(ctx context.Context) context.Context {
		return metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "Bearer "+gw.Token(adaptertest.Realm, "ann")))
	}
	var ran atomic.Int32
	handler := func(context.Context, any) (any, error) { ran.Add(1); return nil, nil }
	testkit.Must(grpcpep.UnaryServerInterceptor(cached, rules)(withToken(t.Context()), nil, info, handler))(t) // ann may read: the grant is cached
	require.EqualValues(t, 1, ran.Load())

	expired, cancel := context.WithDeadline(withToken(context.Background()), time.Now().Add(-time.Second))
	defer cancel()
	cancelled, cancel2 := context.WithCancel(withToken(context.Background()))
	cancel2()
	// A deadline that has passed by the clock, whose timer has not fired:
	// a context whose Deadline says so but whose Err is still nil.
	unfired := deadlineOnly{Context: withToken(context.Background()), d: time.Now().Add(-time.Second)}
	for _, checker := range []grpcpep.Checker{outage{}, cached} {
		for _, tt := range []struct {
			name string
			ctx  context.Context
			want codes.Code
		}{
			{"deadline passed", expired, codes.DeadlineExceeded},
			{"cancelled", cancelled, codes.Canceled},
			{"deadline passed, timer unfired", unfired, codes.DeadlineExceeded},
			{"an outage within the deadline", withToken(t.Context()), codes.Unavailable},
		} {
			_, isOutage := checker.(outage)
			if !isOutage && tt.want == codes.Unavailable {
				continue
			}
			t.Run(map[bool]string{true: "outage ", false: "TestGaveUpCallerNeverReachesTheHandler "}[isOutage]+tt.name, func(t *testing.T) {
				_, err := grpcpep.UnaryServerInterceptor(checker, rules)(tt.ctx, nil, info, handler)
				require.Equal(t, tt.want, status.Code(err), "%v", err)
				require.EqualValues(t, 1, ran.Load(), "the handler of a call whose caller gave up ran")
				require.EqualValues(t, 1, cached.calls.Load(), "a call whose caller gave up was decided")
			})
		}
	}
}

// deadlineOnly is a context whose deadline has passed by the clock while
// its Err is still nil, as a frozen process finds its contexts on waking.
type deadlineOnly struct {
	context.Context
	d time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.d, true }

// counting is a Checker that passes each call on, counting them.
type counting struct {
	grpcpep.Checker
	calls atomic.Int32
}

func (c *counting) CheckMany(ctx context.Context, resources []pep.Resource, opts ...pep.CallOption) (pep.Result, error) {
	c.calls.Add(1)
	return c.Checker.CheckMany(ctx, resources, opts...)
}
