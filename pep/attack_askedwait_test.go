package pep_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackAskedDecisionsAreNotReadAgainAfterTheWait (a-client14b F1):
// issue 17's rule, "no cached decision leaves the client past its TTL or
// its token's purge", is kept by core.Reconfirm for the call's cache hits
// only. A pair the call asked the gateway about is answered, cached, and
// then held by the call while Reconfirm waits for the gateway again about
// a hit that expired meanwhile. When that second wait outlasts the answer's
// TTL, or the token is purged during it, the call still returns the first
// answer's GRANT: a decision the cache itself no longer serves leaves the
// client.
//
// alice's orders/read is cached (29 s into its 30 s TTL); CheckMany and
// ListGranted ask for orders/read and invoices/read. The gateway's answer
// about invoices/read (GRANT) arrives as the hit expires; the re-ask of
// orders/read then waits while (a) an hour passes, or (b) the application
// purges alice's token (say, after changing her roles). invoices/read's
// GRANT, read before that wait, is returned after it.
func TestAttackAskedDecisionsAreNotReadAgainAfterTheWait(t *testing.T) {
	for _, variant := range []string{"an hour passes", "the token is purged"} {
		for _, op := range []string{"CheckMany", "ListGranted"} {
			t.Run(variant+"/"+op, func(t *testing.T) {
				clk := newManualClock()
				g := startReference(t)
				c := g.newClient(t, pep.WithClock(clk.Now), pep.WithCache(100, 30*time.Second, 10*time.Second),
					pep.WithTimeout(2*time.Hour), noRetry)
				alice := g.token(t, "alice")
				c.SetToken(alice)
				requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
				clk.Advance(29 * time.Second)

				var purged atomic.Bool
				g.setHook(func(_ http.ResponseWriter, r *http.Request, _ int) bool {
					body, _ := readBodyString(r)
					switch {
					case strings.Contains(body, `"invoices"`):
						clk.Advance(2 * time.Second) // the hit expires while invoices/read is asked
					case strings.Contains(body, `"orders"`):
						// the re-ask of the expired hit waits
						if variant == "an hour passes" {
							clk.Advance(time.Hour)
						} else {
							if err := c.Purge(context.Background(), alice); err != nil {
								panic(err)
							}
							purged.Store(true)
						}
					}
					return false
				})
				resources := []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "invoices", Scopes: []string{"read"}}}
				var invoices pep.Status
				if op == "CheckMany" {
					r, err := c.CheckMany(t.Context(), resources)
					require.NoError(t, err)
					require.Len(t, r.Decisions, 2)
					invoices = r.Decisions[1].Status
					t.Logf("orders/read %v (cached %v), invoices/read %v (cached %v)",
						r.Decisions[0].Status, r.Decisions[0].Cached, r.Decisions[1].Status, r.Decisions[1].Cached)
				} else {
					got, err := c.ListGranted(t.Context(), resources)
					require.NoError(t, err)
					t.Logf("granted %v", got)
					invoices = pep.Deny
					for _, p := range got {
						if p.Resource == "invoices" {
							invoices = p.Status
						}
					}
				}
				if variant == "the token is purged" {
					require.True(t, purged.Load(), "the re-ask did not happen")
				}
				// The cache itself no longer serves invoices/read: the entry
				// expired (an hour > 30 s) or was purged.
				assert.NotEqual(t, pep.Grant, invoices,
					"invoices/read's GRANT, read before the call waited again, left the client past its TTL or its token's purge")
			})
		}
	}
}
