package cache_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/cache"
)

// clock is a manual clock for tests: time moves only when advance is called.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func newCache[K comparable, V any](t testing.TB, size int, clk *clock) *cache.Cache[K, V] {
	t.Helper()
	c, err := cache.New[K, V](size, cache.WithClock(clk.now))
	require.NoError(t, err)
	return c
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
		{"nil clock", 1, []cache.Option{cache.WithClock(nil)}, "cache: WithClock needs a non-nil clock"},
		{"valid", 1, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := cache.New[string, int](tt.size, tt.opts...)
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
		{"zero ttl stores nothing", 0, 0, false},
		{"negative ttl stores nothing", -time.Second, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			c := newCache[string, string](t, 4, clk)
			c.Add("k", "v", tt.ttl)
			clk.advance(tt.wait)
			got, ok := c.Get("k")
			assert.Equal(t, tt.wantHit, ok)
			if tt.wantHit {
				assert.Equal(t, "v", got)
				assert.Equal(t, cache.Stats{Hits: 1}, c.Stats())
				return
			}
			assert.Empty(t, got, "a miss returns the zero value")
			assert.Equal(t, uint64(1), c.Stats().Misses)
			assert.Equal(t, 0, c.Len(), "nothing is left behind")
		})
	}
}

func TestExpiredEntryIsCountedAndDropped(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c := newCache[string, int](t, 4, clk)
	c.Add("k", 1, time.Second)
	clk.advance(time.Second)
	_, ok := c.Get("k")
	require.False(t, ok)
	assert.Equal(t, cache.Stats{Misses: 1, Expirations: 1}, c.Stats())
	assert.Equal(t, 0, c.Len())
}

func TestNonPositiveTTLRemovesEarlierValue(t *testing.T) {
	t.Parallel()
	c := newCache[string, string](t, 4, newClock())
	c.Add("k", "old answer", time.Minute)
	c.Add("k", "new answer", 0)
	_, ok := c.Get("k")
	assert.False(t, ok, "the old value must not stand in for one that was not kept")
}

func TestLeastRecentlyUsedIsEvicted(t *testing.T) {
	t.Parallel()
	c := newCache[string, int](t, 2, newClock())
	c.Add("a", 1, time.Minute)
	c.Add("b", 2, time.Minute)
	_, ok := c.Get("a") // a becomes the most recently used
	require.True(t, ok)
	c.Add("c", 3, time.Minute) // evicts b

	_, okA := c.Get("a")
	_, okB := c.Get("b")
	_, okC := c.Get("c")
	assert.True(t, okA)
	assert.False(t, okB)
	assert.True(t, okC)
	assert.Equal(t, cache.Stats{Hits: 3, Misses: 1, Evictions: 1}, c.Stats())
	assert.Equal(t, 2, c.Len())
}

func TestReplacingDoesNotEvict(t *testing.T) {
	t.Parallel()
	c := newCache[string, int](t, 2, newClock())
	c.Add("a", 1, time.Minute)
	c.Add("b", 2, time.Minute)
	c.Add("a", 10, time.Minute)
	got, ok := c.Get("a")
	require.True(t, ok)
	assert.Equal(t, 10, got)
	assert.Equal(t, uint64(0), c.Stats().Evictions)
	assert.Equal(t, 2, c.Len())
}

type key struct {
	token    string
	resource string
}

func TestRemoveFunc(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		match     func(key, bool) bool
		wantGone  int
		wantLeft  []key
		wantTaken []key
	}{
		{
			name:      "one token's entries",
			match:     func(k key, _ bool) bool { return k.token == "alice" },
			wantGone:  2,
			wantLeft:  []key{{"bob", "orders"}},
			wantTaken: []key{{"alice", "orders"}, {"alice", "invoices"}},
		},
		{
			name:      "by value",
			match:     func(_ key, granted bool) bool { return granted },
			wantGone:  2,
			wantLeft:  []key{{"alice", "invoices"}},
			wantTaken: []key{{"alice", "orders"}, {"bob", "orders"}},
		},
		{
			name:     "nothing matches",
			match:    func(key, bool) bool { return false },
			wantGone: 0,
			wantLeft: []key{{"alice", "orders"}, {"alice", "invoices"}, {"bob", "orders"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			c := newCache[key, bool](t, 8, clk)
			c.Add(key{"alice", "orders"}, true, time.Minute)
			c.Add(key{"alice", "invoices"}, false, time.Minute)
			c.Add(key{"bob", "orders"}, true, time.Minute)

			assert.Equal(t, tt.wantGone, c.RemoveFunc(tt.match))
			for _, k := range tt.wantLeft {
				_, ok := c.Get(k)
				assert.True(t, ok, "%v should remain", k)
			}
			for _, k := range tt.wantTaken {
				_, ok := c.Get(k)
				assert.False(t, ok, "%v should be removed", k)
			}
		})
	}
}

func TestRemoveFuncReachesExpiredEntries(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c := newCache[string, int](t, 4, clk)
	c.Add("k", 1, time.Second)
	clk.advance(time.Hour)
	assert.Equal(t, 1, c.RemoveFunc(func(string, int) bool { return true }))
	assert.Equal(t, 0, c.Len())
}

func TestRemoveAndPurge(t *testing.T) {
	t.Parallel()
	c := newCache[string, int](t, 4, newClock())
	c.Add("a", 1, time.Minute)
	c.Add("b", 2, time.Minute)
	assert.True(t, c.Remove("a"))
	assert.False(t, c.Remove("a"))
	_, ok := c.Get("b")
	require.True(t, ok)

	c.Purge()
	assert.Equal(t, 0, c.Len())
	_, ok = c.Get("b")
	assert.False(t, ok)
	assert.Equal(t, cache.Stats{Hits: 1, Misses: 1}, c.Stats(), "purge keeps the counters")
}

func TestHitAllocatesNothing(t *testing.T) {
	c := newCache[key, bool](t, 16, newClock())
	k := key{token: "a-long-opaque-token", resource: "orders"}
	c.Add(k, true, time.Minute)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, ok := c.Get(k); !ok {
			t.Fatal("expected a hit")
		}
	})
	assert.Zero(t, allocs)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c := newCache[int, int](t, 64, clk)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				k := (g*1000 + i) % 128
				c.Add(k, k, time.Minute)
				if v, ok := c.Get(k); ok {
					assert.Equal(t, k, v)
				}
				if i%100 == 0 {
					c.RemoveFunc(func(k, _ int) bool { return k%2 == 0 })
					clk.advance(time.Second)
				}
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, c.Len(), 64)
	s := c.Stats()
	assert.Equal(t, uint64(8000), s.Hits+s.Misses)
}

func BenchmarkGetHit(b *testing.B) {
	c := newCache[key, bool](b, 10_000, newClock())
	keys := make([]key, 1000)
	for i := range keys {
		keys[i] = key{token: fmt.Sprintf("token-%d", i%10), resource: fmt.Sprintf("resource-%d", i)}
		c.Add(keys[i], true, time.Hour)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := c.Get(keys[i%len(keys)]); !ok {
			b.Fatal("expected a hit")
		}
		i++
	}
}
