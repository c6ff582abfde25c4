package middleware_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestNoDecisionCrossesTokensUnderEvictionsAndPurges drives the middleware's fast path
// (kept tokens, the cache's lock-free hits) with many tokens of a granted
// and a denied user at once, through a cache of a few entries (evictions,
// group forgetting and re-making on every few requests), while purges of
// single tokens and of everything run alongside: ben is never let through
// and ann is never refused.
func TestNoDecisionCrossesTokensUnderEvictionsAndPurges(t *testing.T) {
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	client := newPep(t, gw, "shop", "orders-api", pep.WithCache(10, time.Minute, time.Minute))
	h := middleware.Require(client, "orders", "read")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	var anns, bens []string
	for range 6 {
		anns = append(anns, gw.Token("shop", "ann"))
		bens = append(bens, gw.Token("shop", "ben"))
	}
	// Fixed work, not a time: 4 workers of 750 requests each (a 3 s run
	// made about 14,000 on a quiet machine, half that beside a CPU hog),
	// purges running until they are done.
	const workers, requests = 4, 750
	var wg, purger sync.WaitGroup
	var bad, served atomic.Int64
	var finished atomic.Bool
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range requests {
				isAnn := r.IntN(2) == 0
				tok := bens[r.IntN(len(bens))]
				if isAnn {
					tok = anns[r.IntN(len(anns))]
				}
				req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, fmt.Sprintf("/orders/%d", r.IntN(3)), nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				served.Add(1)
				if isAnn && rec.Code != http.StatusOK || !isAnn && rec.Code != http.StatusForbidden {
					if bad.Add(1) <= 5 {
						t.Errorf("ann=%v got %d", isAnn, rec.Code)
					}
				}
			}
		}()
	}
	purger.Add(1)
	go func() {
		defer purger.Done()
		for i := 0; !finished.Load(); i++ {
			if i%5 == 0 {
				_ = client.PurgeAll(context.Background())
			} else {
				_ = client.Purge(context.Background(), anns[i%len(anns)])
				_ = client.Purge(context.Background(), bens[i%len(bens)])
			}
			time.Sleep(3 * time.Millisecond) // paces the purges; it orders nothing
		}
	}()
	wg.Wait()
	finished.Store(true)
	purger.Wait()
	st := client.Stats()
	t.Logf("%d requests, %d gateway requests, %d hits", served.Load(), st.GatewayRequests, st.CacheHits)
}
