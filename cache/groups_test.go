package cache_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeUntil: past the horizon, read on the lookup's own clock reading,
// Get serves nothing, though the entries stay and additions go on; a later
// horizon serves them again; StopServing stops at once.
func TestServeUntil(t *testing.T) {
	clk := newClock()
	c := newCache[int](t, 10, clk)
	c.Add("g", "k", 1, time.Hour, 0)
	c.ServeUntil(clk.now().Add(time.Second))
	_, ok := c.Get("g", "k")
	require.True(t, ok)

	clk.advance(time.Second) // a frozen process resumes here: nothing refreshed the horizon
	_, ok = c.Get("g", "k")
	require.False(t, ok, "served at the horizon")
	require.True(t, c.Add("g", "k2", 2, time.Hour, 0), "additions go on")
	require.Equal(t, 2, c.Len())

	c.ServeUntil(clk.now().Add(time.Second))
	v, ok := c.Get("g", "k2")
	require.True(t, ok)
	require.Equal(t, 2, v)

	c.StopServing()
	_, ok = c.Get("g", "k")
	require.False(t, ok)
	c.ServeUntil(clk.now().Add(time.Nanosecond))
	_, ok = c.Get("g", "k")
	require.True(t, ok)
}

// TestHolds: a group is held while it has entries, a pin or a writer.
func TestHolds(t *testing.T) {
	c := newCache[int](t, 10, newClock())
	require.False(t, c.Holds("g"))
	c.Add("g", "k", 1, time.Hour, 0)
	require.True(t, c.Holds("g"))
	c.RemoveGroup("g")
	require.False(t, c.Holds("g"))
	w := c.Writer("g")
	require.True(t, c.Holds("g"))
	w.Close()
	require.False(t, c.Holds("g"))
}
