package cache

import (
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
