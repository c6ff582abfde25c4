package pep_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackStrangerLockout (a-fix15b F1): bob holds a valid token and may
// read and write orders. Every request of his that reaches the gateway
// overlaps one request of an unauthenticated stranger, who sends a
// made-up bearer token through the same middleware (the gateway answers
// 401; the client purges that token, which bumps the client-wide purge
// count that core.Holds compares every uncached answer's Stamp with).
//
// Whenever bob's GRANT is not in the cache when the call checks it again
// (core.Confirm), whether because the cache evicted it (a cache smaller
// than the call's pairs, or other users' traffic: ordinary LRU pressure)
// or because the allow TTL is shorter than the gateway's round trip (the
// case a-client15 F2's fix was for), the stranger's 401 makes it stale, it
// is asked again, the stranger's next 401 makes the re-ask stale too, and
// the call fails closed. bob is refused for as long as the stranger keeps
// sending garbage. The rule: no unauthenticated event invalidates another
// caller's decisions.
func TestAttackStrangerLockout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		opts    []pep.Option
		advance time.Duration
	}{
		{name: "cache evicts (WithCache(1)): GRANTs cacheable, TTL 30s", opts: []pep.Option{pep.WithCache(1, 30*time.Second, 10*time.Second)}},
		{name: "allow TTL shorter than the round trip (a-client15 F2's case)", opts: []pep.Option{pep.WithCache(100, 20*time.Millisecond, 10*time.Second)}, advance: 40 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			clk := newManualClock()
			c := g.newClient(t, append([]pep.Option{pep.WithClock(clk.Now), pep.WithTimeout(time.Minute), noRetry, pep.WithBatchSize(1)}, tt.opts...)...)
			bob := g.token(t, "bob")

			var ran atomic.Bool
			srv := httptest.NewServer(middleware.Require(c, "orders", "read", "write")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				ran.Store(true)
			})))
			defer srv.Close()

			var strangers atomic.Int64
			stranger := func() {
				n := strangers.Add(1)
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/orders/1", nil)
				req.Header.Set("Authorization", fmt.Sprintf("Bearer made-up-token-%d", n))
				resp, err := srv.Client().Do(req)
				if err == nil {
					_ = resp.Body.Close()
				}
			}
			// Sanity: a stranger's request is refused (401 from the gateway).
			stranger()
			require.False(t, ran.Load())

			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				if strings.Contains(r.Header.Get("Authorization"), bob) {
					clk.Advance(tt.advance)
					if !noStranger {
						stranger()
					} // overlapping bob's request: an unauthenticated 401
				}
				return false // the reference server answers
			})

			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/orders/1", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+bob)
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, "bob, valid token, may read and write orders; strangers' 401s made his call fail closed (the outage answer defaults to the denied one, 403)")
			assert.True(t, ran.Load(), "bob's request was not served")
			t.Logf("bob's requests to the gateway: %d, strangers: %d", countAuth(g, bob), strangers.Load())
		})
	}
}

func countAuth(g *reference, tok string) int {
	n := 0
	for _, r := range g.posts() {
		if strings.Contains(r.Authorization, tok) {
			n++
		}
	}
	return n
}

// noStranger turns the stranger off (the control: bob is then served).
var noStranger = os.Getenv("ATTACK_NO_STRANGER") != ""
