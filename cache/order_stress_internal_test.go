package cache

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// Writers of a few groups opened, written (kept and not kept) and closed on
// many goroutines while others Purge, RemoveGroup, Pin and Unpin, with a
// clock that steps back and forth, leave nothing held at the end: no
// group, no marks, Bytes 0.
func TestWritersUnderConcurrencyLeaveNothingHeld(t *testing.T) {
	var ns atomic.Int64
	ns.Store(1e12)
	c := testkit.Must(New[string, string, int](64, WithMaxBytes(16<<10), WithClock(func() time.Time {
		return time.Unix(0, ns.Add(int64(rand.IntN(2000))-700))
	})))(t)
	groups := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 3000 {
				grp := groups[r.IntN(len(groups))]
				ws := make([]*Writer[string, string, int], 1+r.IntN(3))
				for i := range ws {
					ws[i] = c.Writer(grp)
				}
				for i := range ws {
					k := fmt.Sprint("k", r.IntN(8))
					ttl := time.Duration(r.IntN(3)) * time.Second
					ws[r.IntN(len(ws))].Add(k, i, ttl, int64(r.IntN(100)))
				}
				switch r.IntN(20) {
				case 0:
					c.Purge()
				case 1:
					c.RemoveGroup(grp)
				case 2:
					p := c.Pin(grp)
					p.Get("k1")
					p.Unpin()
				}
				for _, i := range r.Perm(len(ws)) {
					ws[i].Close()
					if r.IntN(4) == 0 {
						ws[i].Close()
					}
				}
				c.Get(grp, "k2")
			}
		})
	}
	wg.Wait()
	c.Purge()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes != 0 || c.idle != 0 || c.length != 0 {
		t.Fatalf("after everything closed and a Purge: bytes %d idle %d length %d", c.bytes, c.idle, c.length)
	}
	for _, g := range groups {
		if grp := c.groups.get(groupHash(&c.keys, g), g); grp != nil {
			t.Fatalf("group %q still held: holds %d oldest writer %v", g, grp.holds, c.writing[grp])
		}
	}
}
