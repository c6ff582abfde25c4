package pep_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/orgauthz/orgauthz/invalidation"
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

// TestAnswersAreCheckedAgainAfterTheWait (a-client14b F1, a-client15
// F1-F4): what holds for a call's cache hits holds for the GRANTs it asked
// for: a decision is good as of the moment the call returns, whatever its
// source, and every GRANT leaving the client passes one check, would the
// cache serve it now (core.Confirm). bob asks about orders/read and
// orders/write (CheckMany, ListGranted, and middleware.Require with both
// scopes, where users meet it). orders/read's GRANT is read first; then
// the call waits again: for orders/write's chunk (WithBatchSize(1)), or for
// the re-ask of orders/write, a cached GRANT that expired while orders/read
// was asked. During that wait an hour passes, bob's token is purged,
// another token is purged or refused, the invalidation channel stops being
// trusted while carol is revoked unheard, a NoCache Check gets the gateway's
// newer DENY, or nothing happens. orders/read's GRANT, read before the
// wait, leaves the call only if the cache still holds it, or, with nothing
// cached of it, its request's Stamp still holds (no purge, the channel
// trusted throughout, younger than the longer of the allow TTL and the
// timeout); else it is asked again, or replaced by the newer DENY the cache
// holds. orders/write's GRANT, whose re-ask itself outlived it, fails
// closed; when nothing that concerns the call went stale, nothing is asked
// again.
func TestAnswersAreCheckedAgainAfterTheWait(t *testing.T) {
	t.Parallel()
	hour := func(e *waitEnv) { e.clk.Advance(time.Hour) }
	purge := func(which func(e *waitEnv) string) func(*waitEnv) {
		return func(e *waitEnv) {
			if err := e.c.Purge(context.Background(), which(e)); err != nil {
				panic(err) // the test goroutine is waiting: the panic fails the test
			}
		}
	}
	bobs := purge(func(e *waitEnv) string { return e.bob })
	others := purge(func(e *waitEnv) string { return e.other })
	nothing := func(*waitEnv) {}
	tests := []struct {
		name string
		// hit caches orders/write 29 s into its 30 s TTL, which expires
		// while orders/read is asked when expires is set; else the pairs
		// go in two chunks.
		hit, expires bool
		// bus gives the client an invalidation channel, trusted when the
		// call begins; noCache makes the call with NoCache (not the
		// middleware's); allowTTL, when set, replaces the 30 s allow TTL.
		bus, noCache bool
		allowTTL     time.Duration
		// noDenyTTL caches no DENY (a deny TTL of zero).
		noDenyTTL bool
		// each runs during every request of the call's token.
		each func(e *waitEnv)
		// carol makes the call instead of bob: she reads orders through
		// her departments alone (unassign revokes it) and may not write.
		carol bool
		// wait is what happens during the first request about
		// orders/write of the call.
		wait func(e *waitEnv)
		// wantAsked counts each pair's requests since the call began;
		// wantRead and wantWrite are the decisions (wantRead's zero value
		// meaning a GRANT), orders/write's failed closed when
		// wantWaitedOut.
		wantAsked     map[string]int
		readDenied    bool
		wantWrite     pep.Status
		wantWaitedOut bool
		// noMiddleware: the middleware's keys hold the request's method
		// and path, which the row's other calls do not (the reason).
		noMiddleware string
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
		// a-client15 F1: the cache serves nothing once the channel's
		// heartbeat is older than the trust window (a stalled channel, a
		// frozen process) or the channel is lost, and carol's revocation's
		// purge, published by another replica, never arrives: orders/read's
		// GRANT, answered while the channel was trusted, is asked again.
		{name: "chunks, the heartbeat goes stale and carol is revoked unheard: orders/read asked again", bus: true, carol: true,
			wait: func(e *waitEnv) {
				e.clk.Advance(invalidation.DefaultTrust + 3*time.Second) // well within the 30 s allow TTL
				e.g.unassign(e.t, "carol")
			},
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 1}, readDenied: true, wantWrite: pep.Deny},
		{name: "chunks, the channel is lost and carol is revoked unheard: orders/read asked again", bus: true, carol: true,
			wait: func(e *waitEnv) {
				e.b.Lose(errors.New("connection reset"))
				e.g.unassign(e.t, "carol")
			},
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 1}, readDenied: true, wantWrite: pep.Deny},
		// a-client15 F3: NoCache promises that a later call never gets an
		// older verdict than the one it got; the cache holds its newer
		// DENY, which replaces orders/read's GRANT without asking again.
		{name: "chunks, carol is revoked and a NoCache Check gets the newer DENY: it replaces orders/read's GRANT", carol: true,
			wait: func(e *waitEnv) {
				e.g.unassign(e.t, "carol")
				if d, err := e.c.Check(pep.WithToken(context.Background(), e.bob), "orders", "read", pep.NoCache()); err != nil || d.Status != pep.Deny {
					panic(fmt.Sprintf("the NoCache Check during the wait: %v, %v", d.Status, err))
				}
			},
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 1}, readDenied: true, wantWrite: pep.Deny,
			noMiddleware: "the NoCache Check's DENY is under a key without the request's method and path"},
		// a-client15 F4: a NoCache call stores its answers and reads them
		// back; a stranger's made-up token refused (401, which purges it
		// here and on every replica) sends nothing back to the gateway.
		{name: "chunks, NoCache, a stranger's token is refused: the cache serves both, nothing asked again", noCache: true,
			wait: func(e *waitEnv) {
				if _, err := e.c.Check(pep.WithToken(context.Background(), "made-up-token"), "stranger", "x"); err == nil {
					panic("a made-up token was not refused")
				}
			},
			wantAsked: map[string]int{"orders/read": 1, "orders/write": 1, "stranger/x": 1}, wantWrite: pep.Grant,
			noMiddleware: "the middleware has no NoCache"},
		// a-client15 F2: an allow TTL shorter than the gateway's round
		// trip caches no GRANT, which is what it asks for. Nothing in the
		// cache never means nothing newer happened: both are asked again,
		// once, and their answers, which the cache could not store, hold
		// while the call's deadline has not passed (core.InTime), so the
		// call is not failed closed.
		{name: "chunks, the allow TTL is shorter than the gateway's round trip: both asked again once, and held", allowTTL: 20 * time.Millisecond,
			wait:      func(e *waitEnv) { e.clk.Advance(40 * time.Millisecond) },
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 2}, wantWrite: pep.Grant},
		// a-fix15b F1: a stranger's made-up token, refused (401) alongside
		// every request of bob's, purges that token alone: no count of the
		// client's purges makes bob's answers stale, so the re-ask, which
		// the allow TTL shorter than the round trip calls for, holds to
		// the call's deadline (a stranger used to fail it closed).
		{name: "chunks, a stranger's token is refused during each request, the allow TTL shorter than the round trip: bob is served", allowTTL: 20 * time.Millisecond,
			wait: func(*waitEnv) {},
			each: func(e *waitEnv) {
				e.clk.Advance(40 * time.Millisecond) // every answer, the re-asks' too, comes after its TTL
				tok := fmt.Sprintf("made-up-token-%d", e.strangers.Add(1))
				if _, err := e.c.Check(pep.WithToken(context.Background(), tok), "stranger", "x"); err == nil {
					panic("a made-up token was not refused")
				}
			},
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 2, "stranger/x": 4}, wantWrite: pep.Grant},
		// a-fix15b F2: a-client15 F3's case where the newer DENY is one the
		// cache does not keep (a deny TTL of zero: its Add removes the
		// GRANT and keeps nothing). Nothing under the key is no proof that
		// nothing newer happened: orders/read is asked again.
		{name: "chunks, deny TTL 0, carol is revoked and a NoCache Check gets the newer DENY: orders/read asked again", carol: true, noDenyTTL: true,
			wait: func(e *waitEnv) {
				e.g.unassign(e.t, "carol")
				if d, err := e.c.Check(pep.WithToken(context.Background(), e.bob), "orders", "read", pep.NoCache()); err != nil || d.Status != pep.Deny {
					panic(fmt.Sprintf("the NoCache Check during the wait: %v, %v", d.Status, err))
				}
			},
			wantAsked: map[string]int{"orders/read": 3, "orders/write": 1}, readDenied: true, wantWrite: pep.Deny,
			noMiddleware: "the NoCache Check's DENY is under a key without the request's method and path"},
		// a-fix15b F4: orders/read's GRANT came at once; orders/write's
		// request takes 50 s, during which carol is revoked unheard. The
		// cached GRANT expired (30 s) before the return: it is asked
		// again, not held by the longer of the TTL and the timeout from
		// its send.
		{name: "chunks, orders/write's request takes 50 s and carol is revoked: orders/read asked again", carol: true,
			wait: func(e *waitEnv) {
				e.g.unassign(e.t, "carol")
				e.clk.Advance(50 * time.Second)
			},
			wantAsked: map[string]int{"orders/read": 2, "orders/write": 1}, readDenied: true, wantWrite: pep.Deny},
	}
	resources := []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}
	for _, tt := range tests {
		// setup returns a client, bob's token and the count of requests so
		// far; the gateway runs tt.wait during the call's first request
		// about orders/write (in two chunks, once orders/read's was
		// answered: its Stamp is older than the wait).
		setup := func(t *testing.T) (*reference, *pep.Client, string, int) {
			e := &waitEnv{t: t, clk: newManualClock(), g: startReference(t)}
			ttl := 30 * time.Second
			if tt.allowTTL > 0 {
				ttl = tt.allowTTL
			}
			// An answer asked again that the cache could not store holds
			// while the call's deadline has not passed (core.InTime): a
			// minute on the client's clock, which the hour passes, and on
			// the real one.
			denyTTL := 10 * time.Second
			if tt.noDenyTTL {
				denyTTL = 0
			}
			opts := []pep.Option{pep.WithClock(e.clk.Now), pep.WithCache(100, ttl, denyTTL),
				pep.WithTimeout(time.Minute), noRetry}
			if !tt.hit {
				opts = append(opts, pep.WithBatchSize(1))
			}
			if tt.bus {
				e.b = newBus()
				e.c = e.b.client(t, e.g, opts...)
				e.b.Beat(e.clk.Now())
				require.False(t, e.c.Stats().CacheBypassed)
			} else {
				e.c = e.g.newClient(t, opts...)
			}
			user := "bob"
			if tt.carol {
				user = "carol"
			}
			e.bob, e.other = e.g.token(t, user), e.g.token(t, "alice")
			if tt.hit {
				requireGatewayDecision(t, checkedIn(t, e.c, pep.WithToken(t.Context(), e.bob), "orders", "write"), pep.Grant)
				e.clk.Advance(29 * time.Second)
			}
			readAnswered := make(chan struct{})
			var readOnce, waitOnce sync.Once
			e.g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				body, _ := readBodyString(r)
				if tt.each != nil && strings.Contains(r.Header.Get("Authorization"), e.bob) {
					tt.each(e)
				}
				switch {
				case strings.Contains(body, `"write"`):
					if !tt.hit {
						<-readAnswered
					}
					waitOnce.Do(func() { tt.wait(e) })
				case tt.hit:
					if tt.expires {
						e.clk.Advance(2 * time.Second) // the hit expires while orders/read is asked
					}
				default:
					r.Body = io.NopCloser(strings.NewReader(body))
					e.g.srv.ServeHTTP(w, r)
					readOnce.Do(func() { close(readAnswered) })
					return true
				}
				return false // the reference server answers
			})
			return e.g, e.c, e.bob, len(e.g.posts())
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
		var opts []pep.CallOption
		if tt.noCache {
			opts = append(opts, pep.NoCache())
		}
		t.Run(tt.name+"/CheckMany", func(t *testing.T) {
			t.Parallel()
			g, c, bob, before := setup(t)
			r := testkit.Must(c.CheckMany(pep.WithToken(t.Context(), bob), resources, opts...))(t)
			require.Len(t, r.Decisions, 2)
			if tt.readDenied {
				assert.Equal(t, pep.Deny, r.Decisions[0].Status, "orders/read: carol was revoked during the wait")
				assert.NoError(t, r.Decisions[0].Cause)
			} else {
				requireGatewayDecision(t, r.Decisions[0], pep.Grant)
			}
			requireWrite(t, r.Decisions[1])
			assert.Equal(t, tt.wantAsked, askedSince(g, before))
		})
		t.Run(tt.name+"/ListGranted", func(t *testing.T) {
			t.Parallel()
			g, c, bob, before := setup(t)
			got, err := c.ListGranted(pep.WithToken(t.Context(), bob), resources, opts...)
			var want []pep.Permission
			if !tt.readDenied {
				want = perms("orders", "read")
			}
			if tt.wantWrite == pep.Grant {
				want = append(want, perms("orders", "write")...)
			}
			if tt.wantWaitedOut {
				require.ErrorIs(t, err, pep.ErrUnavailable)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, want, got)
			assert.Equal(t, tt.wantAsked, askedSince(g, before))
		})
		if tt.hit {
			continue // the middleware's keys hold the request's method and path: the Check cached none of them
		}
		if tt.noMiddleware != "" {
			continue
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
			granted := !tt.readDenied && tt.wantWrite == pep.Grant && !tt.wantWaitedOut
			assert.Equal(t, granted, ran.Load(), "status %d", resp.StatusCode)
			assert.Equal(t, tt.wantAsked, askedSince(g, before))
		})
	}
}

// waitEnv is what a row's wait acts on: the test (whose helpers it may
// call from the gateway's goroutine, as the hook does), the client's
// clock, the gateway, the invalidation bus (nil without one), the client,
// the caller's token (bob's, or carol's) and another user's.
type waitEnv struct {
	t          *testing.T
	clk        *testkit.Clock
	g          *reference
	b          *bus
	c          *pep.Client
	bob, other string
	// strangers counts the made-up tokens sent (each).
	strangers atomic.Int64
}
