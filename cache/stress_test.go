package cache_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/cache"
)

// TestEveryOperationAtOnceServesOnlyLiveOwnValues mixes every operation on a small cache (so that
// evictions, sweeps, rehashes of both indexes, group forgetting and
// re-making happen all the time) from many goroutines under a stepped
// clock, and checks on every hit that the value is the pair's own and not
// expired, and on private groups that RemoveGroup, Purge and Writer fences
// hold at once.
func TestEveryOperationAtOnceServesOnlyLiveOwnValues(t *testing.T) {
	var ns atomic.Int64
	ns.Store(1 << 40)
	now := func() time.Time { return time.Unix(0, ns.Load()) }
	c, err := cache.New[string, string, string](48, cache.WithClock(now), cache.WithMaxBytes(48*400))
	if err != nil {
		t.Fatal(err)
	}
	const tick = time.Millisecond
	deadline := time.Now().Add(3 * time.Second)
	var fails atomic.Int64
	fail := func(format string, a ...any) {
		if fails.Add(1) <= 10 {
			t.Errorf(format, a...)
		}
	}
	check := func(g, k, v string, before int64) {
		parts := strings.Split(v, "|")
		if len(parts) != 3 || parts[0] != g || parts[1] != k {
			fail("Get(%q, %q) = %q: another pair's value", g, k, v)
			return
		}
		exp, _ := strconv.ParseInt(parts[2], 10, 64)
		if before >= exp {
			fail("Get(%q, %q) served %q at %d: expired", g, k, v, before)
		}
	}
	// still keeps the clock from stepping while a c.Add is under way, so
	// that the expiry its value records is the one the cache computes: on a
	// loaded machine (or under -race) an Add may wait for the cache's lock
	// through any number of steps.
	var still sync.RWMutex
	var wg sync.WaitGroup
	// The clock: never more than a tick per step.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			still.Lock()
			ns.Add(int64(tick))
			still.Unlock()
			time.Sleep(50 * time.Microsecond)
		}
	}()
	shared := func(r *rand.Rand) (string, string) {
		return "g" + strconv.Itoa(r.IntN(40)), "k" + strconv.Itoa(r.IntN(6))
	}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for time.Now().Before(deadline) {
				g, k := shared(r)
				switch op := r.IntN(100); {
				case op < 45:
					before := ns.Load()
					if v, ok := c.Get(g, k); ok {
						check(g, k, v, before)
					}
				case op < 60:
					grp := c.Lookup(g)
					before := ns.Load()
					if v, ok := grp.Get(k); ok {
						check(g, k, v, before)
					}
				case op < 65:
					grp := c.Pin(g)
					for range 4 {
						before := ns.Load()
						if v, ok := grp.Get(k); ok {
							check(g, k, v, before)
						}
					}
					grp.Unpin()
				case op < 85:
					ttl := time.Duration(1+r.IntN(40)) * tick
					// The real expiry: the clock does not step until Add
					// has read it.
					still.RLock()
					later := ns.Load() + int64(ttl)
					c.Add(g, k, g+"|"+k+"|"+strconv.FormatInt(later, 10), ttl, int64(r.IntN(200)))
					still.RUnlock()
				case op < 88:
					wr := c.Writer(g)
					ttl := time.Duration(1+r.IntN(40)) * tick
					later := ns.Load() + int64(ttl) + int64(tick)
					wr.Add(k, g+"|"+k+"|"+strconv.FormatInt(later, 10), ttl, 10)
					wr.Close()
				case op < 93:
					c.Remove(g, k)
				case op < 98:
					c.RemoveGroup(g)
				case op < 99:
					c.Purge()
				default:
					_ = c.Len() + int(c.Bytes())
					_ = c.Stats()
				}
			}
		}()
	}
	// Private groups: fences must hold at once.
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("private-%d", w)
			for i := 0; time.Now().Before(deadline); i++ {
				k := "k" + strconv.Itoa(i%5)
				c.Add(p, k, p+"|"+k+"|"+strconv.FormatInt(1<<62, 10), time.Hour, 1)
				switch i % 4 {
				case 0:
					c.RemoveGroup(p)
					if v, ok := c.Get(p, k); ok {
						fail("Get after RemoveGroup served %q", v)
					}
					if v, ok := c.Lookup(p).Get(k); ok {
						fail("Lookup.Get after RemoveGroup served %q", v)
					}
				case 1:
					wr := c.Writer(p)
					c.RemoveGroup(p)
					if wr.Add(k, p+"|"+k+"|0", time.Hour, 1) {
						fail("a Writer made before RemoveGroup stored")
					}
					wr.Close()
					if v, ok := c.Get(p, k); ok {
						fail("Get after RemoveGroup (writer) served %q", v)
					}
				case 2:
					pin := c.Pin(p)
					c.RemoveGroup(p)
					if v, ok := pin.Get(k); ok {
						fail("pinned Get after RemoveGroup served %q", v)
					}
					pin.Unpin()
				case 3:
					_ = c.Remove(p, k) // false when evicted meanwhile
					if v, ok := c.Get(p, k); ok {
						fail("Get after Remove served %q", v)
					}
				}
			}
		}()
	}
	wg.Wait()
	// Quiescent: the counts must agree with a full scan.
	c.Purge()
	if c.Len() != 0 {
		t.Errorf("Len after Purge = %d", c.Len())
	}
}
