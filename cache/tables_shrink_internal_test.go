package cache

import (
	"strconv"
	"testing"
	"time"
)

// TestTablesShrinkBackAfterABurst: after a burst of 10,000 one-entry groups
// that then expire, are removed or purged, both tables come back to a
// size in proportion to what is left (tombstones reclaimed, the group
// table shrinking too), and so does the recency ring.
func TestTablesShrinkBackAfterABurst(t *testing.T) {
	// The shrinking rules are in proportion (a table under an eighth full,
	// a ring under a quarter), so any burst hundreds of times the smallest
	// sizes shows whether they shrink back; 10,000 does as 50,000 did.
	const burst = 10_000
	var ns int64 = 1 << 40
	now := func() time.Time { return time.Unix(0, ns) }
	c, err := New[string, string, int](100_000, WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"expiry", "RemoveGroup", "Remove"} {
		for i := range burst {
			c.Add("g"+strconv.Itoa(i), "k", i, time.Second, 0)
		}
		c.Add("keep", "k", 1, time.Hour, 0)
		switch how {
		case "expiry":
			ns += int64(2 * time.Second)
			for range burst / sweepBatch {
				c.Get("nobody", "k") // each miss sweeps a batch
			}
		case "RemoveGroup":
			for i := range burst {
				c.RemoveGroup("g" + strconv.Itoa(i))
			}
		case "Remove":
			for i := range burst {
				c.Remove("g"+strconv.Itoa(i), "k")
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
