package cache

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

type av struct {
	g, k string
	ver  int64
}

// Lock-free readers while one writer moves groups through 1 -> 2 -> 1 -> 0
// entries, RemoveGroup, Purge, replacement and eviction by a small bound:
// a read never returns another pair's value, and a reader never sees a
// pair's version go back (a newer value was observed, then an older one),
// and never sees a value written before a RemoveGroup that completed
// before the read began when nothing was written after.
func TestReadersAcrossGroupTransitions(t *testing.T) {
	c := testkit.Must(New[string, string, av](12))(t)
	groups := []string{"g0", "g1", "g2", "g3"}
	keys := []string{"a", "b", "c"}
	var ver atomic.Int64
	// removedAt[g] = the version counter value when a RemoveGroup of g
	// returned, provided nothing was added to g since (else 0).
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[[2]string]int64{}
			for i := 0; !stop.Load(); i++ {
				g, k := groups[(i+r)%len(groups)], keys[(i/3+r)%len(keys)]
				var v av
				var ok bool
				if i%2 == 0 {
					v, ok = c.Get(g, k)
				} else {
					v, ok = c.Lookup(g).Get(k)
				}
				if !ok {
					continue
				}
				if v.g != g || v.k != k {
					select {
					case errs <- fmt.Sprintf("read %s/%s got %s/%s", g, k, v.g, v.k):
					default:
					}
					return
				}
				p := [2]string{g, k}
				if v.ver < seen[p] {
					select {
					case errs <- fmt.Sprintf("read %s/%s went back from %d to %d", g, k, seen[p], v.ver):
					default:
					}
					return
				}
				seen[p] = v.ver
			}
		}()
	}
	// Fixed work, not a time: 2,500 writes take each group through every
	// transition above some sixty times and purge twice (a 3 s run made
	// about 8,000 on a quiet machine, fewer beside a CPU hog, four
	// readers spinning against the writer on two cores).
	for i := range 2_500 {
		g := groups[i%len(groups)]
		switch i % 11 {
		case 0, 1, 2, 4, 6, 8:
			k := keys[(i/7)%len(keys)]
			c.Add(g, k, av{g, k, ver.Add(1)}, time.Hour, 0)
		case 3:
			c.Remove(g, keys[i%len(keys)])
		case 5:
			c.RemoveGroup(g)
		case 7:
			w := c.Writer(g)
			k := keys[(i/5)%len(keys)]
			w.Add(k, av{g, k, ver.Add(1)}, time.Hour, 0)
			w.Close()
		case 9:
			if i%97 == 0 {
				c.Purge()
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
