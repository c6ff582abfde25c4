package pep_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
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

// TestAnswersAreCheckedAgainAfterTheWait (a-client14b F1): what holds for
// a call's cache hits holds for the GRANTs it asked for: a decision is
// good as of the moment the call returns, whatever its source. bob asks
// about orders/read and orders/write (CheckMany, ListGranted, and
// middleware.Require with both scopes, where users meet it). orders/read's
// GRANT is read first; then the call waits again: for orders/write's chunk
// (WithBatchSize(1)), or for the re-ask of orders/write, a cached GRANT
// that expired while orders/read was asked. During that wait an hour
// passes, bob's token is purged, another token is purged, or nothing
// happens. orders/read's GRANT, read before the wait, leaves the call only
// if asked again after it; orders/write's GRANT, whose re-ask itself
// outlived it, fails closed; when nothing that concerns the call went
// stale, nothing is asked again.
func TestAnswersAreCheckedAgainAfterTheWait(t *testing.T) {
	t.Parallel()
	hour := func(clk *testkit.Clock, _ *pep.Client, _, _ string) { clk.Advance(time.Hour) }
	purge := func(which func(bob, other string) string) func(*testkit.Clock, *pep.Client, string, string) {
		return func(_ *testkit.Clock, c *pep.Client, bob, other string) {
			if err := c.Purge(context.Background(), which(bob, other)); err != nil {
				panic(err) // the test goroutine is waiting: the panic fails the test
			}
		}
	}
	bobs := purge(func(bob, _ string) string { return bob })
	others := purge(func(_, other string) string { return other })
	nothing := func(*testkit.Clock, *pep.Client, string, string) {}
	tests := []struct {
		name string
		// hit caches orders/write 29 s into its 30 s TTL, which expires
		// while orders/read is asked when expires is set; else the pairs
		// go in two chunks.
		hit, expires bool
		// wait is what happens during the first request about
		// orders/write of the call.
		wait func(clk *testkit.Clock, c *pep.Client, bob, other string)
		// wantAsked counts each pair's requests of the call; wantWrite is
		// orders/write's decision (orders/read's is a GRANT in every
		// case), failed closed when wantWaitedOut.
		wantAsked     map[string]int
		wantWrite     pep.Status
		wantWaitedOut bool
	}{
		{name: "chunks, nothing happens: nothing asked again", wait: nothing,
			wantAsked: map[string]int{"orders/read": 1, "orders/write": 1}, wantWrite: pep.Grant},
		{name: "chunks, another token is purged: the cache serves both, nothing asked again", wait: others,
			wantAsked: map[string]int{"orders/read": 1, "orders/write": 1}, wantWrite: pep.Grant},
		{name: "chunks, an hour passes: both asked again", wait: hour,
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 2}, wantWrite: pep.Grant},
		{name: "chunks, the token is purged: both asked again", wait: bobs,
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 2}, wantWrite: pep.Grant},
		{name: "hit, nothing happens: the hit stands", hit: true, wait: nothing,
			wantAsked: map[string]int{"orders/read": 1}, wantWrite: pep.Grant},
		{name: "hit re-asked, an hour passes: orders/read asked again, orders/write fails closed", hit: true, expires: true, wait: hour,
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 1}, wantWrite: pep.Deny, wantWaitedOut: true},
		{name: "hit re-asked, the token is purged: orders/read asked again, orders/write fails closed", hit: true, expires: true, wait: bobs,
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 1}, wantWrite: pep.Deny, wantWaitedOut: true},
	}
	resources := []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}
	for _, tt := range tests {
		// setup returns a client, bob's token and the count of requests so
		// far; the gateway runs tt.wait during the call's first request
		// about orders/write (in two chunks, once orders/read's was
		// answered: its Stamp is older than the wait).
		setup := func(t *testing.T) (*reference, *pep.Client, string, int) {
			clk := newManualClock()
			g := startReference(t)
			// An answer with nothing cached of it holds for the longer of
			// the allow TTL and the timeout (core.Holds): a minute, which
			// the hour passes; the call's deadline is on the real clock.
			opts := []pep.Option{pep.WithClock(clk.Now), pep.WithCache(100, 30*time.Second, 10*time.Second),
				pep.WithTimeout(time.Minute), noRetry}
			if !tt.hit {
				opts = append(opts, pep.WithBatchSize(1))
			}
			c := g.newClient(t, opts...)
			bob, other := g.token(t, "bob"), g.token(t, "alice")
			if tt.hit {
				requireGatewayDecision(t, checkedIn(t, c, pep.WithToken(t.Context(), bob), "orders", "write"), pep.Grant)
				clk.Advance(29 * time.Second)
			}
			readAnswered := make(chan struct{})
			var readOnce, waitOnce sync.Once
			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				body, _ := readBodyString(r)
				switch {
				case strings.Contains(body, `"write"`):
					if !tt.hit {
						<-readAnswered
					}
					waitOnce.Do(func() { tt.wait(clk, c, bob, other) })
				case tt.hit:
					if tt.expires {
						clk.Advance(2 * time.Second) // the hit expires while orders/read is asked
					}
				default:
					r.Body = io.NopCloser(strings.NewReader(body))
					g.srv.ServeHTTP(w, r)
					readOnce.Do(func() { close(readAnswered) })
					return true
				}
				return false // the reference server answers
			})
			return g, c, bob, len(g.posts())
		}
		askedSince := func(g *reference, before int) map[string]int {
			asked := map[string]int{}
			for _, s := range g.posts()[before:] {
				for _, p := range s.pairs() {
					asked[p]++
				}
			}
			return asked
		}
		requireWrite := func(t *testing.T, d pep.Decision) {
			t.Helper()
			if tt.wantWaitedOut {
				require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
				assert.Equal(t, pep.Deny, d.Status)
				return
			}
			assert.Equal(t, tt.wantWrite, d.Status)
			assert.NoError(t, d.Cause)
		}
		t.Run(tt.name+"/CheckMany", func(t *testing.T) {
			t.Parallel()
			g, c, bob, before := setup(t)
			r := testkit.Must(c.CheckMany(pep.WithToken(t.Context(), bob), resources))(t)
			require.Len(t, r.Decisions, 2)
			requireGatewayDecision(t, r.Decisions[0], pep.Grant)
			requireWrite(t, r.Decisions[1])
			assert.Equal(t, tt.wantAsked, askedSince(g, before))
		})
		t.Run(tt.name+"/ListGranted", func(t *testing.T) {
			t.Parallel()
			g, c, bob, before := setup(t)
			got, err := c.ListGranted(pep.WithToken(t.Context(), bob), resources)
			want := perms("orders", "read", "orders", "write")
			if tt.wantWaitedOut {
				require.ErrorIs(t, err, pep.ErrUnavailable)
				want = perms("orders", "read")
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, want, got)
			assert.Equal(t, tt.wantAsked, askedSince(g, before))
		})
		if tt.hit {
			continue // the middleware's keys hold the request's method and path: the Check cached none of them
		}
		t.Run(tt.name+"/middleware", func(t *testing.T) {
			t.Parallel()
			g, c, bob, before := setup(t)
			var ran atomic.Bool
			srv := httptest.NewServer(middleware.Require(c, "orders", "read", "write")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				ran.Store(true)
			})))
			defer srv.Close()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/orders/1", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+bob)
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, !tt.wantWaitedOut, ran.Load(), "status %d", resp.StatusCode)
			assert.Equal(t, tt.wantAsked, askedSince(g, before))
		})
	}
}
