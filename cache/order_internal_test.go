package cache

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// marksOf returns what grp remembers of keys written while an older
// writer is open; nil for nothing.
func marksOf[G, K comparable, V any](c *Cache[G, K, V], grp *Group[G, K, V]) *marks {
	if w := c.writing[grp]; w != nil {
		return w.marks
	}
	return nil
}

// A group remembers the keys written while an older writer is open only
// while one is, so that what a stream of answers costs is bounded by the
// calls under way, and nothing is left once they end.
func TestMarksLastOnlyWhileAnOlderWriterIsOpen(t *testing.T) {
	now := time.Duration(0)
	c := testkit.Must(New[string, string, bool](64, WithClock(func() time.Time { return time.Unix(0, int64(now)) })))(t)

	// No writer open: nothing to remember.
	for i := range 100 {
		now += time.Millisecond
		c.Add("alice", string(rune('a'+i%26)), i%2 == 0, time.Duration(i%2)*time.Minute, 0)
	}
	assert.Nil(t, marksOf(c, c.Lookup("alice")), "remembered with no writer open")

	older := c.Writer("alice")
	for i := range 100 {
		now += time.Millisecond
		w := c.Writer("alice")
		w.Add(string(rune('a'+i%26)), false, time.Duration(i%2)*time.Minute, 0)
		w.Close()
	}
	grp := c.Lookup("alice")
	require.NotNil(t, marksOf(c, grp))
	assert.False(t, older.Add("a", true, time.Minute, 0), "a key written since")
	older.Close()
	assert.Nil(t, marksOf(c, grp), "kept after the last older writer closed")

	// The marks are pruned as the oldest writers close.
	first := c.Writer("alice")
	for range 1000 {
		now += time.Millisecond
		w := c.Writer("alice")
		w.Add("k", false, 0, 0)
		first.Close()
		first = w
	}
	if m := marksOf(c, c.Lookup("alice")); m != nil {
		assert.LessOrEqual(t, len(m.list)-m.start, 4, "marks no open writer is older than are kept")
	}
	first.Close()
}

// What a group remembers of the keys whose newest value left it (marks,
// counted nowhere else) is bounded, however many answers are not kept
// while one older writer is open (a slow request, up to the client's
// timeout): a cache bounded at 64 KiB holds no megabytes it does not count.
func TestMarksOfAGroupAreBounded(t *testing.T) {
	const maxBytes = 64 << 10
	c := testkit.Must(New[string, string, bool](1000, WithMaxBytes(maxBytes)))(t)
	older := c.Writer("mallory") // one slow request of the caller's own token
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// 50,000 answers not kept, 49 times the bound on marks: unbounded,
	// they held 2 MB here (200,000 cost 1.8 s under -race, 0.4 s now).
	for i := range 50_000 {
		w := c.Writer("mallory")
		w.Add(fmt.Sprint("pair-", i), false, 0, 0) // the gateway's ERROR: Forget
		w.Close()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grp := c.Lookup("mallory")
	kept := 0
	if m := marksOf(c, grp); m != nil {
		kept = len(m.list) - m.start
	}
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if held > 10*maxBytes {
		t.Errorf("the cache holds %d B beyond its entries (marks: %d) while Bytes() says %d and the bound is %d",
			held, kept, c.Bytes(), maxBytes)
	}
	older.Close()
}
