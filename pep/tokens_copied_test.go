package pep_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestManyTokensAllowNoJunkAndLeaveNothingCounted: the decision cache's
// copies of tokens never mix one token's decisions into another's, and
// each is uncounted once forgotten. Many per-call tokens at once over real
// HTTP (valid ones of several users, junk ones of every length the cache
// copies differently, answered 401), with the client's own token set and
// cleared, Purge and PurgeAll, under a small byte bound: no junk token is
// ever allowed, and once every call is done and PurgeAll returned, the
// cache holds and counts nothing.
func TestManyTokensAllowNoJunkAndLeaveNothingCounted(t *testing.T) {
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(64, time.Minute, time.Minute), pep.WithCacheMaxBytes(64<<10))
	users := []string{"alice", "bob"}
	var valid []string
	for i := range 12 {
		valid = append(valid, g.token(t, users[i%len(users)]))
	}
	own := valid[0]
	// Fixed work, not a time: 4 workers of 125 calls (a 3 s run made
	// 2,500 to 5,700 on the shared 2-core machine, fewer beside a CPU
	// hog); the own token's churn and the purges run beside them, a step
	// each time a worker's call is done and the churn is not busy.
	const workers, perWorker = 4, 125
	ctx := t.Context()
	var wg, churn sync.WaitGroup
	var junkAllowed, calls atomic.Int64
	step := make(chan struct{}, 1)
	lens := []int{1, 43, 440, 947, 1100, 3000, 8192}
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				var tok string
				junk := i%3 == 0
				if junk {
					n := lens[(i/3+w)%len(lens)]
					tok = fmt.Sprintf("junk-%d-%d-", w, i)
					tok += strings.Repeat("j", max(0, n-len(tok)))
				} else {
					tok = valid[(i+w)%len(valid)]
				}
				res := []string{"orders", "invoices", fmt.Sprintf("orders/%d", i%20)}[i%3]
				d, err := c.Check(pep.WithToken(ctx, tok), res, "read")
				calls.Add(1)
				select {
				case step <- struct{}{}:
				default:
				}
				if junk && err == nil && d.Allowed() {
					junkAllowed.Add(1)
				}
			}
		})
	}
	churn.Go(func() {
		for i := 0; ; i++ {
			if _, more := <-step; !more {
				return
			}
			c.SetToken(own)
			_, _ = c.Check(ctx, "orders", "read")
			if i%3 == 0 {
				c.ClearToken()
			}
			if i%7 == 0 {
				_ = c.Purge(ctx, valid[i%len(valid)])
			}
			if i%11 == 0 {
				_ = c.PurgeAll(ctx)
			}
		}
	})
	wg.Wait()
	close(step)
	churn.Wait()
	c.ClearToken()
	require.NoError(t, c.PurgeAll(t.Context()))
	st := c.Stats()
	t.Logf("calls %d, stats %+v", calls.Load(), st)
	require.Zero(t, junkAllowed.Load(), "a junk token was allowed")
	require.Zero(t, st.CacheEntries, "entries after PurgeAll")
	require.Zero(t, st.CacheBytes, "bytes counted after PurgeAll with nothing held")
}
