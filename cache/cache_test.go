package cache_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// newClock returns a clock that moves only when told to.
func newClock() *testkit.Clock { return testkit.NewClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)) }

// newCache returns a cache of string groups and keys on clk.
func newCache[V any](t testing.TB, size int, clk *testkit.Clock, opts ...cache.Option) *cache.Cache[string, string, V] {
	t.Helper()
	return testkit.Must(cache.New[string, string, V](size, append([]cache.Option{cache.WithClock(clk.Now)}, opts...)...))(t)
}

// overhead learns what the cache's own bookkeeping counts for an entry and
// for a group of string keys and values V, from its Bytes.
func overhead[V any](t testing.TB) (entry, group int64) {
	t.Helper()
	c := newCache[V](t, 8, newClock())
	var v V
	c.Add("g", "a", v, time.Minute, 0)
	one := c.Bytes()
	c.Add("g", "b", v, time.Minute, 0)
	entry = c.Bytes() - one
	require.Positive(t, entry)
	require.Positive(t, one-entry)
	return entry, one - entry
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		size    int
		opts    []cache.Option
		wantErr string
	}{
		{"zero size", 0, nil, "cache: size must be positive, got 0"},
		{"negative size", -3, nil, "cache: size must be positive, got -3"},
		{"size past 2^31", 1<<31 + 1, nil, "cache: size must be at most 2^31 entries, got 2147483649"},
		{"size of 2^31", 1 << 31, nil, ""},
		{"nil clock", 1, []cache.Option{cache.WithClock(nil)}, "cache: WithClock needs a non-nil clock"},
		{"zero bytes", 1, []cache.Option{cache.WithMaxBytes(0)}, "cache: WithMaxBytes needs a positive size, got 0"},
		{"every mistake at once", 0, []cache.Option{cache.WithMaxBytes(-1)},
			"cache: size must be positive, got 0\ncache: WithMaxBytes needs a positive size, got -1"},
		{"valid", 1, []cache.Option{cache.WithMaxBytes(1), nil}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := cache.New[string, string, int](tt.size, tt.opts...)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				assert.Nil(t, c)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 0, c.Len())
		})
	}
}

// TestExpiry: an entry is served until its deadline, by Get and by Peek,
// which counts nothing.
func TestExpiry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		ttl     time.Duration
		wait    time.Duration
		wantHit bool
	}{
		{"fresh entry is a hit", time.Minute, 59 * time.Second, true},
		{"entry expires at its deadline", time.Minute, time.Minute, false},
		{"entry past its deadline is a miss", time.Minute, time.Hour, false},
		// and removes an earlier value: it must not stand in for one that
		// was not kept (TestNonPositiveTTLRemovesEarlierValue)
		{"zero ttl stores nothing", 0, 0, false},
		{"negative ttl stores nothing", -time.Second, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			c := newCache[string](t, 4, clk)
			if tt.ttl <= 0 {
				require.True(t, c.Add("alice", "k", "old answer", time.Minute, 1))
			}
			assert.Equal(t, tt.ttl > 0, c.Add("alice", "k", "v", tt.ttl, 1))
			clk.Advance(tt.wait)
			// Peek serves what Get does, and counts nothing.
			peeked, peekOK := c.Lookup("alice").Peek("k")
			assert.Equal(t, tt.wantHit, peekOK)
			assert.Equal(t, cache.Stats{}, c.Stats())
			got, ok := c.Get("alice", "k")
			assert.Equal(t, tt.wantHit, ok)
			assert.Equal(t, got, peeked)
			if tt.wantHit {
				assert.Equal(t, "v", got)
				assert.Equal(t, cache.Stats{Hits: 1}, c.Stats())
				return
			}
			assert.Empty(t, got, "a miss returns the zero value")
			assert.Equal(t, uint64(1), c.Stats().Misses)
			assert.Equal(t, 0, c.Len(), "nothing is left behind")
			assert.Zero(t, c.Bytes())
		})
	}
}

func TestGroupsAndKeysAreDistinct(t *testing.T) {
	t.Parallel()
	c := newCache[string](t, 4, newClock())
	c.Add("alice", "orders", "alice's", time.Minute, 1)
	c.Add("bob", "orders", "bob's", time.Minute, 1)
	got, ok := c.Get("alice", "orders")
	require.True(t, ok)
	assert.Equal(t, "alice's", got)
	got, ok = c.Get("bob", "orders")
	require.True(t, ok)
	assert.Equal(t, "bob's", got)
	_, ok = c.Get("carol", "orders")
	assert.False(t, ok)
}

func TestLeastRecentlyUsedIsEvicted(t *testing.T) {
	t.Parallel()
	c := newCache[int](t, 2, newClock())
	c.Add("g", "a", 1, time.Minute, 1)
	c.Add("g", "b", 2, time.Minute, 1)
	_, ok := c.Get("g", "a") // a becomes the most recently used
	require.True(t, ok)
	c.Add("g", "c", 3, time.Minute, 1) // evicts b

	_, okA := c.Get("g", "a")
	_, okB := c.Get("g", "b")
	_, okC := c.Get("g", "c")
	assert.True(t, okA)
	assert.False(t, okB)
	assert.True(t, okC)
	assert.Equal(t, cache.Stats{Hits: 3, Misses: 1, Evictions: 1}, c.Stats())
	assert.Equal(t, 2, c.Len())
}

// An addition gives at most 64 second chances: past them the oldest entry
// goes, read or not, so that an addition to a cache whose entries were all
// read lately does not walk them all (the bound the docs state).
func TestSecondChancesAreBoundedPerAddition(t *testing.T) {
	t.Parallel()
	c := newCache[int](t, 100, newClock())
	for i := range 100 {
		c.Add("g", fmt.Sprint("k", i), i, time.Minute, 1)
	}
	for i := range 70 { // the 70 oldest are read
		_, ok := c.Get("g", fmt.Sprint("k", i))
		require.True(t, ok)
	}
	c.Add("g", "new", 0, time.Minute, 1)
	for i := range 100 {
		_, ok := c.Get("g", fmt.Sprint("k", i))
		assert.Equal(t, i != 64, ok, "k%d: 64 second chances, then the oldest goes", i)
	}
}

func TestReplacingDoesNotEvict(t *testing.T) {
	t.Parallel()
	entry, group := overhead[int](t)
	c := newCache[int](t, 2, newClock(), cache.WithMaxBytes(10+2*entry+group))
	c.Add("g", "a", 1, time.Minute, 5)
	c.Add("g", "b", 2, time.Minute, 5)
	c.Add("g", "a", 10, time.Minute, 5)
	got, ok := c.Get("g", "a")
	require.True(t, ok)
	assert.Equal(t, 10, got)
	assert.Equal(t, uint64(0), c.Stats().Evictions)
	assert.Equal(t, 2, c.Len())
	assert.Equal(t, 10+2*entry+group, c.Bytes(), "a replaced entry's size is not counted twice")
}

func TestByteBound(t *testing.T) {
	t.Parallel()
	entry, group := overhead[int](t)
	unit := 30 + entry // what a 30-byte entry counts
	c := newCache[int](t, 100, newClock(), cache.WithMaxBytes(group+3*unit+unit/2))
	for i := range 10 {
		require.True(t, c.Add("g", fmt.Sprint(i), i, time.Minute, 30))
	}
	assert.Equal(t, 3, c.Len(), "three entries and half of a fourth fit")
	assert.Equal(t, group+3*unit, c.Bytes())
	assert.Equal(t, uint64(7), c.Stats().Evictions)
	for i := 7; i < 10; i++ {
		_, ok := c.Get("g", fmt.Sprint(i))
		assert.True(t, ok, "the newest entries stay")
	}

	// One entry larger than the whole bound is refused, and costs nothing.
	assert.False(t, c.Add("g", "huge", -1, time.Minute, 4*unit))
	_, ok := c.Get("g", "huge")
	assert.False(t, ok)
	assert.Equal(t, 3, c.Len(), "a refused entry evicts nothing")

	// A large entry evicts as many small ones as it needs.
	require.True(t, c.Add("g", "big", 0, time.Minute, 2*unit))
	assert.Equal(t, 1, c.Len())
	assert.LessOrEqual(t, c.Bytes(), group+3*unit+unit/2)
}

func TestRemoveGroup(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c := newCache[bool](t, 8, clk)
	c.Add("alice", "orders", true, time.Minute, 1)
	c.Add("alice", "invoices", false, time.Second, 1)
	c.Add("bob", "orders", true, time.Minute, 1)
	clk.Advance(2 * time.Second) // alice's invoices entry has expired; it goes too

	assert.Equal(t, 2, c.RemoveGroup("alice"))
	assert.Equal(t, 0, c.RemoveGroup("alice"), "a removed group is empty")
	assert.Equal(t, 0, c.RemoveGroup("carol"), "an unknown group has nothing")
	_, ok := c.Get("alice", "orders")
	assert.False(t, ok)
	_, ok = c.Get("bob", "orders")
	assert.True(t, ok, "another group's entries stay")
	assert.Equal(t, 1, c.Len())
	entry, group := overhead[bool](t)
	assert.Equal(t, 1+entry+group, c.Bytes(), "alice's group is gone; bob's stays")
}

// A replaced entry leaves its group holding the new one: removing the
// group then removes the new entry too (a token's purge must not leave a
// decision stored after its first one).
func TestReplacedEntryStaysInItsGroup(t *testing.T) {
	t.Parallel()
	c := newCache[string](t, 8, newClock())
	c.Add("alice", "orders", "DENY", time.Minute, 1)
	c.Add("alice", "orders", "GRANT", time.Minute, 1)
	require.True(t, c.Holds("alice"))
	require.Equal(t, 1, c.RemoveGroup("alice"))
	_, ok := c.Get("alice", "orders")
	require.False(t, ok, "the replacing entry outlived its group's removal")
	require.Equal(t, 0, c.Len())
	require.Equal(t, int64(0), c.Bytes())
}

func TestWriterIsFencedByRemoval(t *testing.T) {
	t.Parallel()
	c := newCache[string](t, 8, newClock())
	before := c.Writer("alice") // made before alice's entries are removed
	other := c.Writer("bob")
	c.RemoveGroup("alice")
	after := c.Writer("alice")

	assert.False(t, before.Add("orders", "stale", time.Minute, 1), "an answer fetched before the removal is dropped")
	assert.True(t, after.Add("invoices", "fresh", time.Minute, 1))
	assert.True(t, other.Add("orders", "bob's", time.Minute, 1), "removing alice does not fence bob")
	_, ok := c.Get("alice", "orders")
	assert.False(t, ok)
	_, ok = c.Get("alice", "invoices")
	assert.True(t, ok)

	for _, w := range []*cache.Writer[string, string, string]{before, other, after} {
		w.Close()
		w.Close() // idempotent
	}
	assert.False(t, after.Add("late", "x", time.Minute, 1), "a closed writer stores nothing")

	c.Purge()
	w := c.Writer("alice")
	c.Purge()
	assert.False(t, w.Add("orders", "x", time.Minute, 1), "Purge fences writers as RemoveGroup does")
	w.Close()
}

// Drop removes the values of its group whose keys it covers, and keeps
// the writers made before it from storing under those keys, and nothing
// else: the group's other keys stay served and writable by older
// writers, and writers made after it store under every key (a-hold16 F1:
// a wildcard's request dropped the whole group, so another call's answers
// about other keys, stored or in flight, were fenced and failed closed).
func TestDropFencesOnlyTheKeysItCovers(t *testing.T) {
	t.Parallel()
	invoices := func(k string) bool { return strings.HasPrefix(k, "invoices/") }
	for _, tt := range []struct {
		name  string
		other func(t *testing.T, c *cache.Cache[string, string, string]) // between the older writer and the drop
	}{
		{"no other writer", func(*testing.T, *cache.Cache[string, string, string]) {}},
		{"other writers open and closed", func(t *testing.T, c *cache.Cache[string, string, string]) {
			c.Writer("alice").Close()
			t.Cleanup(c.Writer("alice").Close)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCache[string](t, 16, newClock())
			c.Add("alice", "orders/read", "GRANT", time.Minute, 1)
			c.Add("alice", "invoices/read", "GRANT", time.Minute, 1)
			c.Add("bob", "invoices/read", "GRANT", time.Minute, 1)
			older := c.Writer("alice") // a request in flight before the wildcard's
			defer older.Close()
			tt.other(t, c)
			wide := c.Writer("alice")
			wide.Drop("invoices", invoices)

			_, ok := c.Get("alice", "invoices/read")
			assert.False(t, ok, "a key the drop covers is gone")
			_, ok = c.Get("alice", "orders/read")
			assert.True(t, ok, "a key it does not cover is still served")
			_, ok = c.Get("bob", "invoices/read")
			assert.True(t, ok, "another group is untouched")

			assert.False(t, older.Add("invoices/write", "GRANT", time.Minute, 1), "an older answer under a covered key is refused")
			assert.True(t, older.Add("orders/write", "GRANT", time.Minute, 1), "an older answer under another key is stored")
			assert.True(t, wide.Add("invoices/read", "DENY", time.Minute, 1), "the dropping writer's own answer is stored")
			newer := c.Writer("alice")
			assert.True(t, newer.Add("invoices/write", "GRANT", time.Minute, 1), "a newer writer stores under a covered key")
			newer.Close()
			wide.Close()
			v, _ := c.Get("alice", "invoices/read")
			assert.Equal(t, "DENY", v)
		})
	}
}

// Drop fences older writers for good: past the names of drops a group
// remembers, older writers are refused under every key rather than let
// one through; the same name dropped again and again is remembered once,
// so that it never fences the keys it does not cover (a-fix16b F2: a
// wildcard asked 70 times while a slow request was open fenced that
// request's other keys, failing its GRANTs closed).
func TestDropsPastTheirBoundFenceEveryOlderWriter(t *testing.T) {
	t.Parallel()
	const many = 2000 // more names than a group remembers
	for _, tt := range []struct {
		name     string
		dropName func(i int) string
		otherKey bool // an older writer still stores under a key no drop covers
	}{
		{"one name, dropped again and again", func(int) string { return "r/" }, true},
		{"as many names as drops", func(i int) string { return fmt.Sprintf("r%d/", i) }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCache[string](t, 16, newClock())
			older := c.Writer("alice")
			defer older.Close()
			for i := range many {
				w := c.Writer("alice")
				prefix := tt.dropName(i)
				w.Drop(prefix, func(k string) bool { return strings.HasPrefix(k, prefix) })
				w.Close()
			}
			assert.False(t, older.Add(tt.dropName(0)+"read", "GRANT", time.Minute, 1), "the first drop's key is still fenced")
			assert.False(t, older.Add(tt.dropName(many-1)+"read", "GRANT", time.Minute, 1), "the last drop's key is fenced")
			assert.Equal(t, tt.otherKey, older.Add("orders/read", "GRANT", time.Minute, 1), "a key no drop covers")
			newer := c.Writer("alice")
			assert.True(t, newer.Add(tt.dropName(0)+"read", "GRANT", time.Minute, 1), "a writer made after every drop stores")
			newer.Close()
		})
	}
}

// Drop does nothing after its writer's group was removed (the removal
// fenced more), nor after Close.
func TestDropAfterRemovalOrCloseDoesNothing(t *testing.T) {
	t.Parallel()
	c := newCache[string](t, 16, newClock())
	w := c.Writer("alice")
	c.RemoveGroup("alice")
	c.Add("alice", "invoices/read", "GRANT", time.Minute, 1)
	w.Drop("all", func(string) bool { return true })
	_, ok := c.Get("alice", "invoices/read")
	assert.True(t, ok, "a fenced writer's drop removes nothing of the new generation")
	w.Close()
	w.Drop("all", func(string) bool { return true })
	_, ok = c.Get("alice", "invoices/read")
	assert.True(t, ok, "a closed writer's drop removes nothing")
}

// A newer value that has left the cache, evicted by other groups' entries
// or expired (a DENY's ttl is shorter than a GRANT's), still keeps an
// older writer's value out: a slow answer to an older request is not
// stored once a newer one was kept.
func TestNewerValueThatLeftStillKeepsOlderOnesOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		leave func(c *cache.Cache[string, string, string], clk *testkit.Clock)
	}{
		{"evicted", func(c *cache.Cache[string, string, string], _ *testkit.Clock) {
			for i := range 4 {
				c.Add(fmt.Sprintf("other-%d", i), "k", "x", time.Minute, 1)
			}
		}},
		{"expired", func(_ *cache.Cache[string, string, string], clk *testkit.Clock) { clk.Advance(1500 * time.Millisecond) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			c := newCache[string](t, 2, clk)
			older := c.Writer("alice")
			defer older.Close()
			clk.Advance(100 * time.Millisecond)
			newer := c.Writer("alice")
			newer.Add("orders", "DENY", time.Second, 1)
			newer.Close()
			tt.leave(c, clk)
			_, ok := c.Get("alice", "orders")
			require.False(t, ok, "the newer value is still held")

			assert.False(t, older.Add("orders", "GRANT", 30*time.Second, 1))
			_, ok = c.Get("alice", "orders")
			assert.False(t, ok, "the older value was stored after the newer one")
		})
	}
}

// The order of values is that of the calls to Add and Writer, not of the
// clock: after an injected clock steps back, Add still replaces the value
// it finds, and a ttl of 0 still removes it.
func TestOrderFollowsTheCallsNotTheClock(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c := newCache[string](t, 16, clk)
	c.Add("alice", "orders", "first", time.Hour, 1)
	clk.Advance(-time.Minute)
	require.True(t, c.Add("alice", "orders", "second", time.Hour, 1))
	got, _ := c.Get("alice", "orders")
	assert.Equal(t, "second", got)
	c.Add("alice", "orders", "", 0, 1)
	_, ok := c.Get("alice", "orders")
	assert.False(t, ok, "a ttl of 0 left the earlier value")
}

// A writer's entries live for their time to live from when the writer was
// made, before the fetch, not from when the answer was stored: a slow
// answer, or a process frozen between the answer and its storing, must not
// keep it past its time to live after it was asked for.
func TestWriterTTLCountsFromItsMaking(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fetch     time.Duration // between the writer's making and Add
		then      time.Duration // between Add and Get
		wantStore bool
		wantHit   bool
	}{
		{"read back within the ttl", 40 * time.Second, 19 * time.Second, true, true},
		{"read back at the ttl since the making", 40 * time.Second, 20 * time.Second, true, false},
		{"stored past the ttl", time.Minute, 0, false, false},
		{"stored past the ttl, much later", time.Hour, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			c := newCache[string](t, 4, clk)
			c.Add("alice", "orders", "an older answer", time.Hour, 1)
			w := c.Writer("alice")
			defer w.Close()
			clk.Advance(tt.fetch)
			assert.Equal(t, tt.wantStore, w.Add("orders", "the answer", time.Minute, 1))
			clk.Advance(tt.then)
			got, ok := c.Get("alice", "orders")
			assert.Equal(t, tt.wantHit, ok, "got %q", got)
			if !tt.wantStore {
				assert.Equal(t, 0, c.Len(), "the older answer must not stand in for one that was not kept")
			}
		})
	}
}

// With the real clock, an entry is served until its expiry and not after,
// however hard it is read: every lookup that ended before the time to live
// (counted from before Add) is a hit, and the first one begun after it
// (counted from after Add) is a miss.
func TestRealClockExpiresAnEntryInUse(t *testing.T) {
	t.Parallel()
	const ttl = 50 * time.Millisecond
	c := testkit.Must(cache.New[string, string, bool](4))(t)
	before := time.Now()
	require.True(t, c.Add("alice", "orders", true, ttl, 1))
	after := time.Now()
	h := c.Pin("alice")
	defer h.Unpin()
	for {
		began := time.Now()
		_, ok := h.Get("orders")
		ended := time.Now()
		if late := began.Sub(after) - ttl; late >= 0 {
			require.False(t, ok, "a lookup begun %v after the entry expired found it", late)
			return
		}
		if early := ttl - ended.Sub(before); early > 0 {
			require.True(t, ok, "a lookup ended %v before the entry expired missed it", early)
		}
	}
}

func TestWriterWithoutEntriesLeavesNothing(t *testing.T) {
	t.Parallel()
	c := newCache[string](t, 8, newClock())
	for i := range 1000 {
		w := c.Writer(fmt.Sprint("junk-token-", i))
		c.RemoveGroup(fmt.Sprint("junk-token-", i))
		w.Close()
	}
	// Nothing observable is left; a group with neither entries nor
	// writers is forgotten, which RemoveGroup reports as empty.
	assert.Equal(t, 0, c.Len())
	assert.Equal(t, 0, c.RemoveGroup("junk-token-1"))
}

func TestExpiredEntriesAreSwept(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c := newCache[int](t, 1000, clk)
	for i := range 40 {
		c.Add("old", fmt.Sprint(i), i, time.Second, 1)
	}
	clk.Advance(time.Minute)
	// Nobody asks for the old entries again; newer activity drops them
	// a batch at a time.
	for i := range 3 {
		c.Add("new", fmt.Sprint(i), i, time.Hour, 1)
	}
	assert.Equal(t, 3, c.Len(), "every expired entry was swept")
	assert.Equal(t, uint64(40), c.Stats().Expirations)
	entry, group := overhead[int](t)
	assert.Equal(t, 3+3*entry+group, c.Bytes())
}

func TestRemoveAndPurge(t *testing.T) {
	t.Parallel()
	c := newCache[int](t, 4, newClock())
	c.Add("g", "a", 1, time.Minute, 1)
	c.Add("g", "b", 2, time.Minute, 1)
	assert.True(t, c.Remove("g", "a"))
	assert.False(t, c.Remove("g", "a"))
	_, ok := c.Get("g", "b")
	require.True(t, ok)

	c.Purge()
	assert.Equal(t, 0, c.Len())
	assert.Zero(t, c.Bytes(), "no group is left either")
	_, ok = c.Get("g", "b")
	assert.False(t, ok)
	assert.Equal(t, cache.Stats{Hits: 1, Misses: 1}, c.Stats(), "purge keeps the counters")
}

type token struct{ scheme, value string }

func TestHitAllocatesNothing(t *testing.T) {
	c := testkit.Must(cache.New[token, string, bool](16))(t)
	g := token{"Bearer", "a-long-opaque-token"}
	c.Add(g, "orders", true, time.Minute, 1)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, ok := c.Get(g, "orders"); !ok {
			t.Fatal("expected a hit")
		}
	})
	assert.Zero(t, allocs)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	clk := newClock()
	entry, group := overhead[int](t)
	budget := 3*group + 50*(10+entry)
	c := newCache[int](t, 64, clk, cache.WithMaxBytes(budget))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			group := fmt.Sprint("g", g%3)
			for i := range 1000 {
				k := fmt.Sprint((g*1000 + i) % 128)
				w := c.Writer(group)
				w.Add(k, i, time.Minute, 10)
				w.Close()
				if _, ok := c.Get(group, k); ok {
					_ = ok
				}
				if i%100 == 0 {
					c.RemoveGroup(group)
					clk.Advance(time.Second)
				}
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, c.Len(), int((budget-group)/(10+entry)))
	assert.LessOrEqual(t, c.Bytes(), budget)
	s := c.Stats()
	assert.Equal(t, uint64(8000), s.Hits+s.Misses)
}

// Lock-free readers racing writers that add, replace, evict, remove groups
// and purge read only their own group's values, by value and through
// handles: every value names the group it was stored in (and -race checks
// that entries are published whole).
func TestConcurrentReadersSeeOnlyTheirGroup(t *testing.T) {
	t.Parallel()
	c := testkit.Must(cache.New[string, int, int](200))(t)
	const groups, keys = 4, 64
	name := func(g int) string { return fmt.Sprint("token-", g) }
	var done atomic.Bool
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			h := c.Pin(name(r))
			defer h.Unpin()
			for i := 0; !done.Load(); i++ {
				g, k := i%groups, i%keys
				if v, ok := c.Get(name(g), k); ok && v/1000 != g {
					t.Errorf("group %d reads group %d's value", g, v/1000)
					return
				}
				if v, ok := h.Get(k); ok && v/1000 != r {
					t.Errorf("a handle of group %d reads group %d's value", r, v/1000)
					return
				}
				if v, ok := c.Lookup(name(g)).Get(k); ok && v/1000 != g {
					t.Errorf("a Lookup of group %d reads group %d's value", g, v/1000)
					return
				}
			}
		})
	}
	// 3,000 writes: four Purges, 29 RemoveGroups, 425 Removes, every
	// group's keys replaced and evicted many times over (20,000 cost 4 s
	// under -race, four readers spinning against the writer on two cores).
	for i := range 3_000 {
		g := i % groups
		c.Add(name(g), i%keys, g*1000+i%1000, time.Minute, 0)
		switch {
		case i%997 == 0:
			c.Purge()
		case i%101 == 0:
			c.RemoveGroup(name(g))
		case i%7 == 0:
			c.Remove(name(g), i%keys)
		}
	}
	done.Store(true)
	wg.Wait()
}

func BenchmarkGetHit(b *testing.B) {
	c, err := cache.New[token, string, bool](10_000)
	require.NoError(b, err)
	type k struct {
		g token
		r string
	}
	keys := make([]k, 1000)
	for i := range keys {
		keys[i] = k{token{"Bearer", fmt.Sprintf("token-%d", i%10)}, fmt.Sprintf("resource-%d", i)}
		c.Add(keys[i].g, keys[i].r, true, time.Hour, 1)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		kk := keys[i%len(keys)]
		if _, ok := c.Get(kk.g, kk.r); !ok {
			b.Fatal("expected a hit")
		}
		i++
	}
}

// BenchmarkGroupGetHit reads through a pinned handle, as a client's own
// token does: no hash of the group value per lookup.
func BenchmarkGroupGetHit(b *testing.B) {
	c, err := cache.New[token, string, bool](10_000)
	require.NoError(b, err)
	g := token{"Bearer", strings.Repeat("t", 700)}
	h := c.Pin(g)
	defer h.Unpin()
	c.Add(g, "orders/read", true, time.Hour, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := h.Get("orders/read"); !ok {
			b.Fatal("expected a hit")
		}
	}
}

// BenchmarkRemoveGroup removes a group of 10 entries from caches that hold
// ever more entries of other groups: the cost must not grow with them.
func BenchmarkRemoveGroup(b *testing.B) {
	for _, others := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			c, err := cache.New[string, int, bool](others + 10)
			require.NoError(b, err)
			for i := range others {
				c.Add(fmt.Sprint("other-", i%1000), i, true, time.Hour, 1)
			}
			b.ReportAllocs()
			for b.Loop() {
				for i := range 10 {
					c.Add("victim", i, true, time.Hour, 1)
				}
				if c.RemoveGroup("victim") != 10 {
					b.Fatal("expected 10 entries removed")
				}
			}
		})
	}
}

// The byte bound must be honest: what Bytes reports tracks what the heap
// really grows by, for many small groups (one token per caller) as for one
// large group.
func TestBytesTrackRealMemory(t *testing.T) {
	payload := strings.Repeat("p", 100)
	tests := []struct {
		name   string
		groups int
		per    int
	}{
		{"one entry per group", 10_000, 1},
		{"one large group", 1, 10_000},
		{"small groups", 2_000, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := make([]string, tt.groups*tt.per)
			groups := make([]token, tt.groups)
			for i := range groups {
				groups[i] = token{"Bearer", fmt.Sprintf("%s-token-%06d", payload, i)}
			}
			for i := range keys {
				keys[i] = fmt.Sprintf("%s-key-%06d", payload, i)
			}
			c := testkit.Must(cache.New[token, string, bool](len(keys) + 1))(t)
			grown := float64(testkit.HeapGrowth(func() {
				for i, k := range keys {
					// The strings are the caller's already; the cache
					// counts its own bookkeeping, its copy of the key
					// included, and here nothing more.
					c.Add(groups[i/tt.per], k, true, time.Hour, 0)
				}
			}))
			runtime.KeepAlive(keys) // the caller's keys and groups are not the cache's to free
			runtime.KeepAlive(groups)
			counted := float64(c.Bytes())
			t.Logf("heap grew %.0f bytes, counted %.0f (%.2f)", grown, counted, grown/counted)
			assert.Less(t, grown, 1.15*counted, "the cache holds more than it counts")
			assert.Greater(t, grown, 0.5*counted, "the cache counts far more than it holds")
			runtime.KeepAlive(c)
		})
	}
}

func TestPinnedHandleOutlivesRemoval(t *testing.T) {
	t.Parallel()
	c := newCache[string](t, 8, newClock())
	h := c.Pin("alice")
	c.Add("alice", "orders", "GRANT", time.Minute, 1)
	v, ok := h.Get("orders")
	require.True(t, ok)
	assert.Equal(t, "GRANT", v)
	c.RemoveGroup("alice")
	_, ok = h.Get("orders")
	assert.False(t, ok, "a removed entry is gone through the handle too")
	c.Add("alice", "orders", "DENY", time.Minute, 1)
	v, ok = h.Get("orders")
	require.True(t, ok, "the pinned handle sees the group's new entries")
	assert.Equal(t, "DENY", v)
	h.Unpin()
	c.RemoveGroup("alice")
	assert.Equal(t, int64(0), c.Bytes(), "an unpinned, empty group is forgotten")

	other := c.Lookup("nobody")
	_, ok = other.Get("orders")
	assert.False(t, ok, "a group the cache does not hold reads nothing")
	assert.Equal(t, uint64(2), c.Stats().Misses, "the two misses are counted, the unknown group's too")
}

// Hits only mark entries; eviction gives a marked entry a second chance,
// so a frequently read entry survives a stream of new ones.
func TestHotEntrySurvivesAStreamOfNewOnes(t *testing.T) {
	t.Parallel()
	c := newCache[int](t, 4, newClock())
	c.Add("g", "hot", 0, time.Minute, 0)
	for i := range 100 {
		_, ok := c.Get("g", "hot")
		require.True(t, ok, "after %d new entries", i)
		c.Add("g", fmt.Sprint("cold-", i), i, time.Minute, 0)
	}
	assert.Equal(t, 4, c.Len())
}

// A string given to Add, a key or one of a group value's, is the cache's
// own from then on: a caller that builds keys or tokens in one reused
// buffer (unsafe.String over it, as a hot path that allocates nothing
// does) finds each entry under them afterwards, by value and through
// Lookup, short strings (a key's kept in the entry's allocation) and long
// ones alike.
func TestAddKeepsItsOwnCopyOfTheKey(t *testing.T) {
	for _, inGroup := range []bool{false, true} {
		for _, n := range []int{1, 20, 43, 200, 900, 3000} {
			name := map[bool]string{false: "key", true: "TestAddKeepsItsOwnCopyOfTheGroup"}[inGroup]
			t.Run(fmt.Sprint(name, "/", n), func(t *testing.T) {
				c := testkit.Must(cache.New[token, string, int](16))(t)
				at := func(s string) (token, string) { // the group and key s is in
					if inGroup {
						return token{"Bearer", s}, "k"
					}
					return token{"Bearer", "g"}, s
				}
				buf := make([]byte, n)
				for i := range 4 {
					for j := range buf {
						buf[j] = byte('a' + i)
					}
					g, k := at(unsafe.String(&buf[0], n))
					require.True(t, c.Add(g, k, i, time.Minute, 0))
				}
				for j := range buf {
					buf[j] = 'z' // the caller's bytes change again; the cache's do not
				}
				for i := range 4 {
					g, k := at(strings.Repeat(string(rune('a'+i)), n))
					v, ok := c.Get(g, k)
					assert.True(t, ok, "%d by value", i)
					assert.Equal(t, i, v)
					v, ok = c.Lookup(g).Get(k)
					assert.True(t, ok, "%d through Lookup", i)
					assert.Equal(t, i, v)
				}
				g, k := at(strings.Repeat("z", n))
				_, ok := c.Get(g, k)
				assert.False(t, ok)
				assert.Equal(t, !inGroup, c.Holds(g))
				runtime.KeepAlive(buf)
			})
		}
	}
}
