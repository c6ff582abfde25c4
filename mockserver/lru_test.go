package mockserver

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// keys returns l's keys from the most recently used to the least,
// walking the ring both ways and checking that the two walks and the map
// agree.
func keys(t *testing.T, l *lru[int, string]) []int {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	var fwd, back []int
	for e := l.ring.next; e != &l.ring && len(fwd) <= len(l.items); e = e.next {
		require.Same(t, l.items[e.key], e, "the ring's entry of %d is the map's", e.key)
		fwd = append(fwd, e.key)
	}
	for e := l.ring.prev; e != &l.ring && len(back) <= len(l.items); e = e.prev {
		back = append([]int{e.key}, back...)
	}
	require.Equal(t, fwd, back, "the ring reads the same both ways")
	require.Len(t, fwd, len(l.items), "the ring holds every entry once")
	return fwd
}

// TestLRUForgetsTheLeastRecentlyUsed: each operation of the verified-token
// caches' LRU, from the same start (3, 2, 1 from the most recently used,
// in an LRU of 3), leaves the entries, their order and the answers the
// token cache relies on.
func TestLRUForgetsTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		op   func(t *testing.T, l *lru[int, string])
		want []int // keys from the most recently used
	}{
		{"add past the size forgets the oldest", func(t *testing.T, l *lru[int, string]) {
			had, evicted := l.containsOrAdd(4, "four")
			require.False(t, had)
			require.True(t, evicted)
		}, []int{4, 3, 2}},
		{"a touched entry is kept over older ones", func(t *testing.T, l *lru[int, string]) {
			l.touch(1)
			_, evicted := l.containsOrAdd(4, "four")
			require.True(t, evicted)
		}, []int{4, 1, 3}},
		{"peek and contains do not mark", func(t *testing.T, l *lru[int, string]) {
			v, ok := l.peek(1)
			require.True(t, ok)
			require.Equal(t, "one", v)
			require.True(t, l.contains(1))
			_, ok = l.peek(9)
			require.False(t, ok)
			require.False(t, l.contains(9))
			l.containsOrAdd(4, "four")
		}, []int{4, 3, 2}},
		{"an entry there already is neither replaced nor marked", func(t *testing.T, l *lru[int, string]) {
			had, evicted := l.containsOrAdd(1, "uno")
			require.True(t, had)
			require.False(t, evicted)
			v, _ := l.peek(1)
			require.Equal(t, "one", v)
		}, []int{3, 2, 1}},
		{"touching a missing key adds nothing", func(t *testing.T, l *lru[int, string]) {
			l.touch(9)
		}, []int{3, 2, 1}},
		{"removeOldest forgets the oldest, then nothing", func(t *testing.T, l *lru[int, string]) {
			for range 3 {
				require.True(t, l.removeOldest())
			}
			require.False(t, l.removeOldest())
			require.Zero(t, l.len())
		}, nil},
		{"removeIf forgets only a match", func(t *testing.T, l *lru[int, string]) {
			require.False(t, l.removeIf(2, func(v string) bool { return v == "deux" }))
			require.False(t, l.removeIf(9, func(string) bool { return true }))
			require.True(t, l.removeIf(2, func(v string) bool { return v == "two" }))
			require.Equal(t, 2, l.len())
		}, []int{3, 1}},
		{"room made by a removal takes a new entry without evicting", func(t *testing.T, l *lru[int, string]) {
			l.removeIf(3, func(string) bool { return true })
			_, evicted := l.containsOrAdd(4, "four")
			require.False(t, evicted)
		}, []int{4, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := newLRU[int, string](3)
			require.NoError(t, err)
			l.containsOrAdd(1, "one")
			l.containsOrAdd(2, "two")
			l.containsOrAdd(3, "three")
			require.Equal(t, []int{3, 2, 1}, keys(t, l))
			tc.op(t, l)
			require.Equal(t, tc.want, keys(t, l))
		})
	}
}

// TestLRUNeedsRoomForOne: an LRU of no entries is refused (the token cache
// then remembers nothing).
func TestLRUNeedsRoomForOne(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, -1} {
		_, err := newLRU[int, string](size)
		require.ErrorContains(t, err, "at least one entry")
	}
}

// TestLRUConcurrentUse: goroutines reading, marking, adding and removing at
// once leave an LRU within its size whose ring and map agree (run with
// -race).
func TestLRUConcurrentUse(t *testing.T) {
	t.Parallel()
	const size, workers, rounds = 16, 4, 2000
	l, err := newLRU[int, string](size)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				k := (i*7 + w) % (2 * size)
				switch i % 5 {
				case 0, 1:
					l.containsOrAdd(k, "v")
				case 2:
					l.peek(k)
					l.touch(k)
				case 3:
					l.removeIf(k, func(v string) bool { return v == "v" })
				default:
					l.removeOldest()
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, len(keys(t, l)), size)
}
