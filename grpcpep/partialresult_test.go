package grpcpep_test

import (
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
