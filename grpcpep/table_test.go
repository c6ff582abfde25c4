package grpcpep_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/orgauthz/orgauthz/internal/adaptertest"
)

// code is the gRPC code of each outcome class of the shared table.
var code = map[adaptertest.Outcome]codes.Code{
	adaptertest.Granted:         codes.OK,
	adaptertest.BadRequest:      codes.InvalidArgument,
	adaptertest.Unauthenticated: codes.Unauthenticated,
	adaptertest.Denied:          codes.PermissionDenied,
	adaptertest.Unavailable:     codes.Unavailable,
}

// The table every adapter shares (internal/adaptertest), over a loopback
// gRPC server with grpc-go's own client, each case on a unary call and on
// a bidirectional stream.
func TestAdapterTable(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	for _, c := range adaptertest.Cases() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", c.Name, stream), func(t *testing.T) {
				t.Parallel()
				checker := env.CheckerFor(c)
				svc := &orders{}
				conn := serve(t, svc, guarded(checker)...)
				ctx := t.Context()
				if vals := c.Values(env.Tokens); len(vals) > 0 {
					ctx = metadata.NewOutgoingContext(ctx, metadata.MD{"authorization": vals})
				}
				got, err := call(ctx, conn, c.Operation, stream)
				st := status.Convert(err)
				require.Equal(t, code[c.Want], st.Code(), "want %s; status %v", c.Want, st)
				assert.Equal(t, c.Asks, checker.Calls() > 0, "the Checker asked")
				if c.Want == adaptertest.Granted {
					assert.Equal(t, adaptertest.Ran+c.Operation, got)
					assert.Equal(t, int32(1), svc.ran.Load())
					return
				}
				assert.Zero(t, svc.ran.Load(), "the handler must not run")
				assert.NotEmpty(t, st.Message())
				for name, tok := range env.Tokens {
					assert.False(t, strings.Contains(st.Message(), tok), "the status quotes %s's token", name)
				}
			})
		}
	}
}
