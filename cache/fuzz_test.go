package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// model is what a cache that never evicts holds: each (group, key)'s value
// and expiry. An expired entry stays in the model, as it may in the cache,
// until it is replaced or removed.
type model struct {
	entries map[[2]int]modelEntry
}

type modelEntry struct {
	v       int
	expires time.Time
}

// live reports what a lookup of (g, k) at now must return.
func (m *model) live(g, k int, now time.Time) (int, bool) {
	e, ok := m.entries[[2]int{g, k}]
	if !ok || !now.Before(e.expires) {
		return 0, false
	}
	return e.v, true
}

// count returns the entries of g the model holds: those unexpired at now,
// and all of them, expired or not.
func (m *model) count(g int, now time.Time) (live, all int) {
	for p, e := range m.entries {
		if p[0] == g {
			all++
			if now.Before(e.expires) {
				live++
			}
		}
	}
	return live, all
}

// FuzzCacheMatchesModel runs a sequence of operations, read from the input
// a byte or two at a time, on a cache of four groups of eight keys, large
// enough never to evict, and on a model of it: every read (by group value,
// through a Lookup handle, through a pinned handle) must answer as the model
// does, never a removed, expired, or other group's value; a Writer made
// before its group's removal must store nothing, nor a value under a key
// a newer writer's Drop covered; counts must stay within what the model
// allows.
func FuzzCacheMatchesModel(f *testing.F) {
	f.Add([]byte{0, 0x11, 1, 0x11, 2, 0x01, 3, 0x11, 4, 0x01, 6, 1, 0, 0x11})
	f.Add([]byte{7, 0, 0, 0x00, 4, 0, 8, 0x10, 1, 0x00, 9, 0, 5, 11, 1, 0, 0x22, 10, 0x02})
	f.Add([]byte{11, 2, 0, 0x23, 12, 0x23, 4, 2, 0, 0x23, 12, 0x23, 13, 2, 5, 12, 0x23})
	f.Add([]byte{0, 0x35, 0, 0x45, 6, 3, 1, 0x35, 0, 0x05, 6, 9, 1, 0x45, 3, 0x05})
	f.Add([]byte{0, 0x11, 0, 0x12, 7, 0x10, 14, 0x11, 1, 0x11, 1, 0x12, 8, 0x13, 8, 0x14, 1, 0x13, 1, 0x14, 9, 0x10})
	f.Fuzz(func(t *testing.T, ops []byte) {
		clk := newClock()
		c := testkit.Must(cache.New[string, string, int](1000, cache.WithClock(clk.Now)))(t)
		m := &model{entries: map[[2]int]modelEntry{}}
		type writer struct {
			w       *cache.Writer[string, string, int]
			made    time.Time
			seq     int  // the order of its values: Add and Writer count them
			removed bool // its group was removed since it was made
			drops   int  // the Drops of newer writers since it was made
		}
		// seq counts the Adds and Writers; written holds the number of the
		// newest value written under each pair, kept or not: a writer
		// older than it stores nothing there.
		seq, written := 0, map[[2]int]int{}
		writers := map[int]*writer{}
		pins := map[int]*cache.Group[string, string, int]{}
		group := func(g int) string { return fmt.Sprint("token-", g) }
		key := func(k int) string { return fmt.Sprint("key-", k) }
		ttls := []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second}
		// add applies an addition made at from (now, or a writer's making)
		// to the model.
		add := func(g, k, v int, from time.Time, ttl time.Duration) bool {
			p := [2]int{g, k}
			if exp := from.Add(ttl); ttl > 0 && clk.Now().Before(exp) {
				m.entries[p] = modelEntry{v, exp}
				return true
			}
			delete(m.entries, p)
			return false
		}
		removeGroup := func(g int) {
			for p := range m.entries {
				if p[0] == g {
					delete(m.entries, p)
				}
			}
			if w := writers[g]; w != nil {
				w.removed = true
			}
		}
		read := func(how string, g, k int, got int, ok bool) {
			t.Helper()
			want, wantOK := m.live(g, k, clk.Now())
			if ok != wantOK || got != want {
				t.Fatalf("%s (%d, %d) = %d, %v; the model holds %d, %v", how, g, k, got, ok, want, wantOK)
			}
		}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%15, ops[i+1]
			g, k := int(arg>>4)%4, int(arg&7)
			v := i
			now := clk.Now()
			switch op {
			case 0: // Add
				ttl := ttls[int(arg>>3)&1|int(arg>>6)&2]
				seq++
				written[[2]int{g, k}] = seq
				want := add(g, k, v, now, ttl)
				if got := c.Add(group(g), key(k), v, ttl, int64(k)); got != want {
					t.Fatalf("Add(%d, %d, ttl %v) = %v, want %v", g, k, ttl, got, want)
				}
			case 1: // Get by value
				got, ok := c.Get(group(g), key(k))
				read("Get", g, k, got, ok)
			case 2: // a Lookup handle
				got, ok := c.Lookup(group(g)).Get(key(k))
				read("Lookup.Get", g, k, got, ok)
			case 3: // Remove
				_, live := m.live(g, k, now)
				_, held := m.entries[[2]int{g, k}]
				got := c.Remove(group(g), key(k))
				if live && !got || !held && got {
					t.Fatalf("Remove(%d, %d) = %v; the model holds it: %v, unexpired: %v", g, k, got, held, live)
				}
				delete(m.entries, [2]int{g, k})
			case 4: // RemoveGroup
				live, all := m.count(g, now)
				if n := c.RemoveGroup(group(g)); n < live || n > all {
					t.Fatalf("RemoveGroup(%d) = %d; the model holds %d, %d of them unexpired", g, n, all, live)
				}
				removeGroup(g)
			case 5: // Purge
				c.Purge()
				for g := range 4 {
					removeGroup(g)
				}
			case 6: // time passes
				clk.Advance(time.Duration(arg%8) * 500 * time.Millisecond)
			case 7: // a Writer
				if writers[g] == nil {
					seq++
					writers[g] = &writer{w: c.Writer(group(g)), made: now, seq: seq}
				}
			case 8: // the Writer adds
				if w := writers[g]; w != nil {
					ttl := ttls[int(arg>>3)&1|int(arg>>6)&2]
					p := [2]int{g, k}
					superseded := written[p] > w.seq
					want := false
					if !w.removed && !superseded {
						written[p] = max(written[p], w.seq)
						want = add(g, k, v, w.made, ttl)
					}
					if got := w.w.Add(key(k), v, ttl, 1); got != want {
						t.Fatalf("Writer(%d).Add(%d, ttl %v) = %v, want %v (removed since made: %v, a newer value written: %v)", g, k, ttl, got, want, w.removed, superseded)
					}
				}
			case 9: // the Writer closes
				if w := writers[g]; w != nil {
					w.w.Close()
					delete(writers, g)
				}
			case 10, 13: // a pinned handle reads
				if h := pins[g]; h != nil {
					got, ok := h.Get(key(k))
					read("pinned Get", g, k, got, ok)
				}
			case 11: // Pin
				if pins[g] == nil {
					pins[g] = c.Pin(group(g))
				}
			case 12: // Unpin
				if h := pins[g]; h != nil {
					h.Unpin()
					delete(pins, g)
				}
			case 14: // a new Writer drops the keys of one parity, then closes
				if w := writers[g]; w != nil && w.drops == 32 {
					break // within what a group remembers of drops (a bound of the cache's)
				}
				parity := byte(arg & 1)
				seq++
				d := c.Writer(group(g))
				d.Drop(fmt.Sprint("parity ", parity), func(s string) bool { return (s[len(s)-1]-'0')%2 == parity })
				d.Close()
				for kk := range 8 {
					if byte(kk%2) == parity {
						p := [2]int{g, kk}
						delete(m.entries, p)
						written[p] = max(written[p], seq)
					}
				}
				if w := writers[g]; w != nil {
					w.drops++
				}
			}
			// Counts: Len holds every unexpired entry, and nothing the
			// model does not; a group is held while it has unexpired
			// entries, a pin or a writer, and not without any entry.
			now = clk.Now()
			live, all := 0, len(m.entries)
			for _, e := range m.entries {
				if now.Before(e.expires) {
					live++
				}
			}
			if n := c.Len(); n < live || n > all {
				t.Fatalf("Len() = %d; the model holds %d, %d of them unexpired", n, all, live)
			}
			for g := range 4 {
				l, a := m.count(g, now)
				held := pins[g] != nil || writers[g] != nil
				if h := c.Holds(group(g)); (l > 0 || held) && !h || a == 0 && !held && h {
					t.Fatalf("Holds(%d) = %v; the model holds %d entries, %d unexpired, pinned or written: %v", g, h, a, l, held)
				}
			}
		}
		for _, w := range writers {
			w.w.Close()
		}
		for _, h := range pins {
			h.Unpin()
		}
		c.Purge()
		if c.Len() != 0 || c.Bytes() != 0 {
			t.Fatalf("after Purge with nothing held: Len %d, Bytes %d", c.Len(), c.Bytes())
		}
	})
}
