package cache_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/cache"
)

// TestServeUntil: past the horizon, read on the lookup's own clock reading,
// Get serves nothing, though the entries stay and additions go on; a later
// horizon serves them again; StopServing stops at once.
func TestServeUntil(t *testing.T) {
	clk := newClock()
	c := newCache[int](t, 10, clk)
	c.Add("g", "k", 1, time.Hour, 0)
	c.ServeUntil(clk.Now().Add(time.Second))
	_, ok := c.Get("g", "k")
	require.True(t, ok)

	clk.Advance(time.Second) // a frozen process resumes here: nothing refreshed the horizon
	_, ok = c.Get("g", "k")
	require.False(t, ok, "served at the horizon")
	require.True(t, c.Add("g", "k2", 2, time.Hour, 0), "additions go on")
	require.Equal(t, 2, c.Len())

	c.ServeUntil(clk.Now().Add(time.Second))
	v, ok := c.Get("g", "k2")
	require.True(t, ok)
	require.Equal(t, 2, v)

	c.StopServing()
	_, ok = c.Get("g", "k")
	require.False(t, ok)
	c.ServeUntil(clk.Now().Add(time.Nanosecond))
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

// TestNaNGroupIsForgottenWhenReleased: a group whose value is not equal to
// itself (a struct holding a NaN) is never found by its value again, so
// each Add makes a new group; once its entries are gone it is forgotten
// all the same, and uncounted: Bytes stays within the bound, and the
// callers who come after find their entries kept.
func TestNaNGroupIsForgottenWhenReleased(t *testing.T) {
	type ident struct {
		Token  string
		Weight float64
	}
	const bound = 64 << 10
	c, err := cache.New[ident, string, bool](4, cache.WithMaxBytes(bound))
	require.NoError(t, err)
	nan := ident{"junk", math.NaN()}
	for range 2000 {
		c.Add(nan, "k", true, time.Hour, 0)
	}
	require.LessOrEqual(t, c.Len(), 4)
	require.LessOrEqual(t, c.Bytes(), int64(bound), "the NaN groups whose entries were evicted are still counted")
	for i := range 4 {
		require.True(t, c.Add(ident{string(rune('a' + i)), 1}, "k", true, time.Hour, 0))
	}
	for i := range 4 {
		_, ok := c.Get(ident{string(rune('a' + i)), 1}, "k")
		require.True(t, ok, "entry %d of 4 evicted by bytes nothing holds", i)
	}
	require.LessOrEqual(t, c.Bytes(), int64(bound))

	c.Purge()
	require.Zero(t, c.Len())
	require.Zero(t, c.Bytes(), "bytes counted after Purge with nothing held")
}
