package pep_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// TestHitsAreReadAgainAfterTheWait (a-client13 F2): CheckMany, and
// ListGranted of named pairs, read orders/read from the cache, a GRANT
// cached 29 s ago with a 30 s TTL, and wait for the gateway about
// orders/write. carol's GRANT was revoked since it was cached (the cache
// cannot know). Whatever happens to the entry while the call waits, no
// GRANT leaves the client past its TTL or its token's purge: the hit is
// read again when the gateway part is done and, if the cache no longer
// serves it, asked again within the call's deadline, or failed closed
// past it.
func TestHitsAreReadAgainAfterTheWait(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// wait is what happens while the gateway holds orders/write.
		wait func(clk *testkit.Clock, c *pep.Client, token string, ctx *frozentest.Unfired)
		// want is orders/read's decision; wantAsked, the pairs of the
		// requests after the Check, in order.
		want       pep.Status
		wantCached bool
		wantLate   bool
		wantAsked  []string
	}{
		{
			name:       "the entry still serves: the cached GRANT stands",
			wait:       func(*testkit.Clock, *pep.Client, string, *frozentest.Unfired) {},
			want:       pep.Grant,
			wantCached: true,
			wantAsked:  []string{"orders/write"},
		},
		{
			name: "the TTL runs out: asked again",
			wait: func(clk *testkit.Clock, _ *pep.Client, _ string, _ *frozentest.Unfired) {
				clk.Advance(2 * time.Second)
			},
			want:      pep.Deny,
			wantAsked: []string{"orders/write", "orders/read"},
		},
		{
			name: "the token is purged: asked again",
			wait: func(_ *testkit.Clock, c *pep.Client, token string, _ *frozentest.Unfired) {
				if err := c.Purge(context.Background(), token); err != nil {
					panic(err) // the test goroutine is waiting: the panic fails the test
				}
			},
			want:      pep.Deny,
			wantAsked: []string{"orders/write", "orders/read"},
		},
		{
			name: "frozen an hour past the call's deadline: fails closed, nothing sent",
			wait: func(clk *testkit.Clock, _ *pep.Client, _ string, ctx *frozentest.Unfired) {
				clk.Advance(time.Hour)
				ctx.Pass()
			},
			want:      pep.Deny,
			wantLate:  true,
			wantAsked: []string{"orders/write"},
		},
	}
	resources := []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}
	for _, tt := range tests {
		// setup returns a client whose cache holds carol's revoked GRANT of
		// orders/read, 29 s into its 30 s TTL, the context of the call,
		// and the count of requests so far; the gateway runs tt.wait while
		// it holds orders/write.
		setup := func(t *testing.T) (*reference, *pep.Client, *frozentest.Unfired, int) {
			clk := newManualClock()
			g := startReference(t)
			c := g.newClient(t, pep.WithClock(clk.Now), pep.WithCache(100, 30*time.Second, 10*time.Second),
				pep.WithTimeout(2*time.Hour), noRetry)
			carol := g.token(t, "carol")
			c.SetToken(carol)
			requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
			g.unassign(t, "carol") // revoked: the cache still holds the GRANT
			clk.Advance(29 * time.Second)

			ctx := frozentest.NewUnfired(time.Hour)
			g.setHook(func(_ http.ResponseWriter, r *http.Request, _ int) bool {
				if body, _ := readBodyString(r); strings.Contains(body, `"write"`) {
					tt.wait(clk, c, carol, ctx)
				}
				return false // the reference server answers
			})
			return g, c, ctx, len(g.posts())
		}
		askedSince := func(g *reference, before int) []string {
			var asked []string
			for _, s := range g.posts()[before:] {
				asked = append(asked, s.pairs()...)
			}
			return asked
		}
		t.Run(tt.name+"/CheckMany", func(t *testing.T) {
			t.Parallel()
			g, c, ctx, before := setup(t)
			r := testkit.Must(c.CheckMany(ctx, resources))(t)
			require.Len(t, r.Decisions, 2)
			d := r.Decisions[0]
			if tt.wantLate {
				requireDeadlineDenial(t, d)
				requireDeadlineDenial(t, r.Decisions[1])
				assert.Equal(t, uint64(2), c.Stats().FailClosed)
			} else {
				requireGatewayDecision(t, d, tt.want)
				assert.Equal(t, tt.wantCached, d.Cached)
				requireGatewayDecision(t, r.Decisions[1], pep.Deny)
			}
			assert.Equal(t, pep.Deny, r.Status)
			assert.Equal(t, tt.wantAsked, askedSince(g, before))
		})
		t.Run(tt.name+"/ListGranted", func(t *testing.T) {
			t.Parallel()
			g, c, ctx, before := setup(t)
			got, err := c.ListGranted(ctx, resources)
			if tt.wantLate {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			} else {
				require.NoError(t, err)
			}
			var want []pep.Permission
			if tt.want == pep.Grant {
				want = perms("orders", "read")
			}
			assert.Equal(t, want, got)
			assert.Equal(t, tt.wantAsked, askedSince(g, before))
		})
	}
}
