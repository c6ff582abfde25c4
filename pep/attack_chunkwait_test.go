package pep_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackEarlyChunkOutlivesItsTTL (a-client14b F1, the path without a
// hit): a call whose pairs go in two chunks (WithBatchSize(1)), no pair
// cached, so Reconfirm has nothing to read again. invoices/read's chunk is
// answered GRANT and cached; orders/read's chunk waits at the gateway
// while (a) an hour passes, or (b) alice's token is purged. The call
// returns invoices/read's GRANT, read before that wait, though its TTL
// (30 s) passed or its entry was purged while the call still ran.
func TestAttackEarlyChunkOutlivesItsTTL(t *testing.T) {
	for _, variant := range []string{"an hour passes", "the token is purged"} {
		t.Run(variant, func(t *testing.T) {
			clk := newManualClock()
			g := startReference(t)
			c := g.newClient(t, pep.WithClock(clk.Now), pep.WithCache(100, 30*time.Second, 10*time.Second),
				pep.WithTimeout(2*time.Hour), pep.WithBatchSize(1), noRetry)
			alice := g.token(t, "alice")
			c.SetToken(alice)
			g.setHook(func(_ http.ResponseWriter, r *http.Request, _ int) bool {
				body, _ := readBodyString(r)
				if strings.Contains(body, `"orders"`) {
					// wait until invoices/read's answer was read and cached
					deadline := time.Now().Add(10 * time.Second)
					for c.Stats().CacheEntries == 0 && time.Now().Before(deadline) {
						time.Sleep(time.Millisecond)
					}
					if variant == "an hour passes" {
						clk.Advance(time.Hour)
					} else if err := c.Purge(context.Background(), alice); err != nil {
						panic(err)
					}
				}
				return false
			})
			r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "invoices", Scopes: []string{"read"}}})
			require.NoError(t, err)
			require.Len(t, r.Decisions, 2)
			t.Logf("orders/read %v, invoices/read %v, overall %v", r.Decisions[0].Status, r.Decisions[1].Status, r.Status)
			assert.NotEqual(t, pep.Grant, r.Decisions[1].Status,
				"invoices/read's GRANT, read before the call's other chunk waited, left the client past its TTL or its token's purge")
		})
	}
}
