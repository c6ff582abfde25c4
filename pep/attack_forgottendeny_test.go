package pep_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackForgottenDeny (a-fix15b F2): a-client15 F3's case, where the
// newer DENY is one the cache does not keep. carol asks CheckMany about
// orders/read and orders/write (two chunks). orders/read's GRANT is read;
// while orders/write is at the gateway carol is revoked and a NoCache Check
// of orders/read gets the gateway's newer DENY. With a deny TTL, the cache
// holds that DENY and core.Confirm replaces the older GRANT with it. With
// a deny TTL of zero (WithCache documents it: "a zero TTL keeps none of
// that kind"), the DENY's Add removes the GRANT entry and keeps nothing;
// Confirm then finds nothing under the key and falls back to the older
// answer's Stamp, which holds (no purge: a DENY is not one), so the call
// returns the GRANT the client already knows to be stale. The same
// happens for every newer answer the cache "forgets" rather than keeps
// (Writer.Forget: an ERROR, a denial with reasons, a pair listed twice) and
// for a newer DENY evicted before the check.
func TestAttackForgottenDeny(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		denyTTL time.Duration
		list    bool
		size    int
	}{{10 * time.Second, false, 100}, {0, false, 100}, {10 * time.Second, true, 100}, {0, true, 100},
		// the newer DENY is kept, then evicted by the call's own next answer (LRU pressure)
		{10 * time.Second, false, 1}} {
		denyTTL := tc.denyTTL
		t.Run(fmt.Sprintf("denyTTL=%v/ListGranted=%v/size=%d", denyTTL, tc.list, tc.size), func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			clk := newManualClock()
			c := g.newClient(t, pep.WithClock(clk.Now), pep.WithCache(tc.size, 30*time.Second, denyTTL),
				pep.WithTimeout(time.Minute), noRetry, pep.WithBatchSize(1))
			carol := g.token(t, "carol")
			readAnswered := make(chan struct{})
			var readOnce, waitOnce sync.Once
			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				body, _ := readBodyString(r)
				r.Body = io.NopCloser(strings.NewReader(body))
				if !strings.Contains(r.Header.Get("Authorization"), carol) {
					return false
				}
				switch {
				case strings.Contains(body, `"write"`):
					<-readAnswered
					waitOnce.Do(func() {
						g.unassign(t, "carol")
						d, err := c.Check(pep.WithToken(context.Background(), carol), "orders", "read", pep.NoCache())
						if err != nil || d.Status != pep.Deny {
							panic(fmt.Sprintf("the NoCache Check during the wait: %v, %v", d.Status, err))
						}
					})
				default:
					g.srv.ServeHTTP(w, r)
					readOnce.Do(func() { close(readAnswered) })
					return true
				}
				return false
			})
			resources := []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}
			if tc.list {
				got, err := c.ListGranted(pep.WithToken(t.Context(), carol), resources)
				require.NoError(t, err)
				assert.Empty(t, got, "ListGranted lists orders/read, whose newer DENY the client got before the call returned")
				return
			}
			r, err := c.CheckMany(pep.WithToken(t.Context(), carol), resources)
			require.NoError(t, err)
			require.Len(t, r.Decisions, 2)
			assert.Equal(t, pep.Deny, r.Decisions[0].Status,
				"orders/read: the client got the gateway's newer DENY (NoCache Check) before the call returned, yet the call returns the older GRANT")
			assert.NotEqual(t, pep.Grant, r.Status)
		})
	}
}
