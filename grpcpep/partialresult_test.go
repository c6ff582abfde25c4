package grpcpep_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAGrantOfAnotherPairRunsNoHandler: a call of the write method
// (orders/write), unary or stream, runs no handler on a Checker result that
// granted only orders/read, a pair the interceptor never asked about
// (a-edge16b F2).
func TestAGrantOfAnotherPairRunsNoHandler(t *testing.T) {
	svc := &orders{}
	c := fixed{res: pep.Result{Status: pep.Grant, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: pep.Grant}}}}
	conn := serve(t, svc, guarded(c)...)
	ctx := bearer(t.Context(), "tok")
	for _, stream := range []bool{false, true} {
		_, err := call(ctx, conn, adaptertest.OpWrite, stream)
		if status.Code(err) == codes.OK {
			t.Errorf("stream %v: the orders/write handler ran on a result that granted only orders/read", stream)
		}
	}
}

// rewriting rewrites the scopes it is asked, in place, to "read" and
// grants those (a wrapper that "normalizes" its input).
type rewriting struct{}

func (rewriting) CheckMany(_ context.Context, rs []pep.Resource, _ ...pep.CallOption) (pep.Result, error) {
	res := pep.Result{Status: pep.Grant}
	for i := range rs[0].Scopes {
		rs[0].Scopes[i] = "read"
		res.Decisions = append(res.Decisions, pep.Decision{Resource: rs[0].Name, Scope: "read", Status: pep.Grant})
	}
	return res, nil
}

// TestACheckerRewritingWhatItIsAskedRunsNoHandler: the interceptors read
// the Checker's answer against what they asked, which the Checker is
// handed a copy of: a Checker that rewrites orders/write to orders/read
// and grants that runs no write handler, unary or stream (the answer was
// read against the very slice the Checker rewrote).
func TestACheckerRewritingWhatItIsAskedRunsNoHandler(t *testing.T) {
	conn := serve(t, &orders{}, guarded(rewriting{})...)
	ctx := bearer(t.Context(), "tok")
	for _, stream := range []bool{false, true} {
		if _, err := call(ctx, conn, adaptertest.OpWrite, stream); status.Code(err) == codes.OK {
			t.Errorf("stream %v: the orders/write handler ran on a grant of orders/read", stream)
		}
	}
}
