package cache

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A group remembers the keys answered with a value not kept only while a
// writer made before is open, so that what a stream of such answers costs
// is bounded by the calls under way, and nothing is left once they end.
func TestForgetsLastOnlyWhileAnOlderWriterIsOpen(t *testing.T) {
	now := time.Duration(0)
	c, err := New[string, string, bool](64, WithClock(func() time.Time { return time.Unix(0, int64(now)) }))
	require.NoError(t, err)

	// No older writer open: nothing to remember.
	for i := range 100 {
		now += time.Millisecond
		c.Add("alice", string(rune('a'+i%26)), false, 0, 0)
	}
	grp := c.Lookup("alice")
	assert.True(t, grp == c.none || grp.forgets == nil, "remembered with no writer open")

	older := c.Writer("alice")
	for i := range 100 {
		now += time.Millisecond
		w := c.Writer("alice")
		w.Add(string(rune('a'+i%26)), false, 0, 0)
		w.Close()
	}
	grp = c.Lookup("alice")
	require.NotNil(t, grp.forgets)
	assert.False(t, older.Add("a", true, time.Minute, 0), "a key answered since, not kept")
	older.Close()
	assert.Nil(t, grp.forgets, "kept after the last older writer closed")

	// The list of marks is pruned as the oldest writers close.
	first := c.Writer("alice")
	for range 1000 {
		now += time.Millisecond
		w := c.Writer("alice")
		w.Add("k", false, 0, 0)
		first.Close()
		first = w
	}
	grp = c.Lookup("alice") // the one before was forgotten with its last writer
	if grp.forgets != nil {
		assert.LessOrEqual(t, len(grp.forgets.marks), 4, "marks no open writer is older than are kept")
	}
	first.Close()
}

// What a group remembers of the keys whose newest value left it (marks,
// counted nowhere else) is bounded, however many answers are not kept
// while one older writer is open (a slow request, up to the client's
// timeout): a cache bounded at 64 KiB holds no megabytes it does not count.
func TestMarksOfAGroupAreBounded(t *testing.T) {
	const maxBytes = 64 << 10
	c, err := New[string, string, bool](1000, WithMaxBytes(maxBytes))
	if err != nil {
		t.Fatal(err)
	}
	older := c.Writer("mallory") // one slow request of the caller's own token
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 200_000 {
		w := c.Writer("mallory")
		w.Add(fmt.Sprint("pair-", i), false, 0, 0) // the gateway's ERROR: Forget
		w.Close()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grp := c.Lookup("mallory")
	marks := 0
	if grp.forgets != nil {
		marks = len(grp.forgets.marks) - grp.forgets.start
	}
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if held > 10*maxBytes {
		t.Errorf("the cache holds %d B beyond its entries (marks: %d) while Bytes() says %d and the bound is %d",
			held, marks, c.Bytes(), maxBytes)
	}
	older.Close()
}
