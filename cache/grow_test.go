package cache_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestReadersNeverMissAnEntryWhileItsGroupGrows: a group of one entry keeps
// it out of the index, and its second entry moves both into the index; a
// reader racing that move, by group value or through a handle, finds the
// first entry in one place or the other, every time, and never another
// key's value. Many groups grow while readers read their first entries.
func TestReadersNeverMissAnEntryWhileItsGroupGrows(t *testing.T) {
	const groups = 4000
	c := testkit.Must(cache.New[string, string, int](4 * groups))(t)
	names := make([]string, groups)
	for i := range names {
		names[i] = "token-" + strconv.Itoa(i)
		c.Add(names[i], "first", i, time.Hour, 0)
	}
	// The readers read the group the writer is growing (cur) and the one
	// before it, over and over, so that their reads meet the move.
	var cur atomic.Int64
	var done atomic.Bool
	var misses atomic.Int64
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Go(func() {
			for !done.Load() {
				n := cur.Load()
				for _, i := range []int64{n, max(n-1, 0)} {
					g := names[i]
					var v int
					var ok bool
					if r%2 == 0 {
						v, ok = c.Get(g, "first")
					} else {
						v, ok = c.Lookup(g).Get("first")
					}
					if (!ok || v != int(i)) && misses.Add(1) <= 5 {
						t.Errorf("(%s, first) = %d, %v; want %d, true", g, v, ok, i)
					}
				}
			}
		})
	}
	for i, g := range names {
		cur.Store(int64(i))
		c.Add(g, "second", -i, time.Hour, 0)
		c.Add(g, "third", -i, time.Hour, 0)
	}
	done.Store(true)
	wg.Wait()
	for i, g := range names {
		for _, k := range []string{"first", "second", "third"} {
			want := -i
			if k == "first" {
				want = i
			}
			if v, ok := c.Get(g, k); !ok || v != want {
				t.Fatalf("after: (%s, %s) = %d, %v; want %d", g, k, v, ok, want)
			}
		}
	}
}
