package cache

import (
	"strconv"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestTablesShrinkBackAfterABurst: after a burst of 6,000 groups, half of
// one entry (which the group keeps, Group.one) and half of two (which the
// key index holds), that then expire, are removed or purged, both tables
// come back to a size in proportion to what is left (the index's
// tombstones reclaimed and its table shrinking, the group table shrinking
// too), and so does the recency ring.
func TestTablesShrinkBackAfterABurst(t *testing.T) {
	// The shrinking rules are in proportion (a table under an eighth full,
	// a ring under a quarter), so any burst hundreds of times the smallest
	// sizes shows whether they shrink back; 6,000 groups (9,000 entries,
	// 6,000 of them in the index) do as 50,000 one-entry groups did.
	const burst = 6_000
	var ns int64 = 1 << 40
	now := func() time.Time { return time.Unix(0, ns) }
	c := testkit.Must(New[string, string, int](100_000, WithClock(now)))(t)
	// keys returns the keys of group i: two for an odd i, whose entries
	// the index holds, one for an even i.
	keys := func(i int) []string { return []string{"k", "j"}[:1+i%2] }
	for _, how := range []string{"expiry", "RemoveGroup", "Remove"} {
		entries, indexed := 0, 0
		for i := range burst {
			for _, k := range keys(i) {
				c.Add("g"+strconv.Itoa(i), k, i, time.Second, 0)
			}
			entries += len(keys(i))
			if len(keys(i)) > 1 {
				indexed += len(keys(i))
			}
		}
		c.Add("keep", "k", 1, time.Hour, 0)
		c.mu.RLock()
		peak := c.idx.live
		c.mu.RUnlock()
		if peak != indexed {
			t.Fatalf("%s: the index holds %d entries at the burst's peak, want the two-entry groups' %d", how, peak, indexed)
		}
		switch how {
		case "expiry":
			ns += int64(2 * time.Second)
			for range entries/sweepBatch + 1 {
				c.Get("nobody", "k") // each miss sweeps a batch
			}
		case "RemoveGroup":
			for i := range burst {
				c.RemoveGroup("g" + strconv.Itoa(i))
			}
		case "Remove":
			for i := range burst {
				for _, k := range keys(i) {
					c.Remove("g"+strconv.Itoa(i), k)
				}
			}
		}
		c.mu.RLock()
		idx, grp, ring, n := len(c.idx.tab.Load().slots), len(c.groups.tab.Load().slots), cap(c.ring), c.length
		c.mu.RUnlock()
		t.Logf("after %s: %d entries, index %d slots, groups %d slots, ring %d", how, n, idx, grp, ring)
		if n > 1 || idx > 4*minSlots || grp > 4*minSlots || ring > 4*minRing {
			t.Errorf("after %s: %d entries left, index of %d slots, group table of %d, ring of %d", how, n, idx, grp, ring)
		}
	}
}
