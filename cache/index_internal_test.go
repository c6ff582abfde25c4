package cache

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// testIndex is an index of entries of a few groups of one hasher, for the
// tests of the index alone.
type testIndex struct {
	index[string, string, int]
	h      hasher
	groups map[string]*Group[string, string, int]
}

func newIndex() *testIndex {
	x := &testIndex{h: newHasher[string, string](), groups: map[string]*Group[string, string, int]{}}
	x.init()
	return x
}

func (x *testIndex) group(g string) *Group[string, string, int] {
	grp := x.groups[g]
	if grp == nil {
		grp = &Group[string, string, int]{id: g, seed: groupHash(&x.h, g)}
		x.groups[g] = grp
	}
	return grp
}

func (x *testIndex) entry(g, k string, v int) *entry[string, string, int] {
	return &entry[string, string, int]{key: k, grp: x.group(g), value: v}
}

func (x *testIndex) hashOf(e *entry[string, string, int]) uint64 {
	return keyHash(&x.h, e.grp.seed, e.key)
}

func (x *testIndex) put(e *entry[string, string, int]) *entry[string, string, int] {
	return x.index.put(x.hashOf(e), e)
}

func (x *testIndex) remove(e *entry[string, string, int]) bool {
	return x.index.remove(x.hashOf(e), e)
}

// get looks (g, k) up through the group's handle.
func (x *testIndex) get(t *testing.T, g, k string) *entry[string, string, int] {
	t.Helper()
	grp := x.group(g)
	return x.index.get(keyHash(&x.h, grp.seed, k), grp, k)
}

// TestIndexMatchesAMap puts, replaces and removes pairs of several groups at
// random and requires the index to answer as a map does, through growth,
// tombstones and shrinking: every put and remove answers as the map, and
// every pair is looked up after each new table and every 5,000 changes.
func TestIndexMatchesAMap(t *testing.T) {
	x := newIndex()
	type pair struct{ g, k string }
	want := map[pair]*entry[string, string, int]{}
	r := rand.New(rand.NewPCG(1, 2))
	largest := 0
	var lastTab *table[string, string, int]
	// The names, made once: the sweeps below look up 6,000 pairs some 60
	// times, and formatting each name anew cost more than the lookups.
	gName, kName := make([]string, 3), make([]string, 2000)
	for g := range gName {
		gName[g] = fmt.Sprint("g", g)
	}
	for k := range kName {
		kName[k] = fmt.Sprint("k", k)
	}
	for i := range 100_000 {
		// Grow to about 2,000 keys in each of three groups, then shrink
		// to a few.
		keys := 2000
		if i >= 60_000 {
			keys = 20
		}
		if i == 60_000 {
			for p, e := range want {
				if n, _ := strconv.Atoi(p.k[1:]); n >= keys {
					x.remove(e)
					delete(want, p)
				}
			}
		}
		p := pair{gName[r.IntN(3)], kName[r.IntN(keys)]}
		switch old := want[p]; {
		case r.IntN(3) == 0 && old != nil:
			if !x.remove(old) {
				t.Fatalf("remove(%v) found nothing", p)
			}
			delete(want, p)
		case r.IntN(3) == 0 && old != nil:
			// A replaced entry is no longer removed under its pair.
			e := x.entry(p.g, p.k, i)
			if got := x.put(e); got != old {
				t.Fatalf("put(%v) replaced %p, want %p", p, got, old)
			}
			if x.remove(old) {
				t.Fatalf("remove of the replaced entry of %v removed something", p)
			}
			want[p] = e
		default:
			e := x.entry(p.g, p.k, i)
			if got := x.put(e); got != old {
				t.Fatalf("put(%v) replaced %p, want %p", p, got, old)
			}
			want[p] = e
		}
		largest = max(largest, len(x.tab.Load().slots))
		// Every table is checked whole once it is published (growth,
		// a rebuild for tombstones, shrinking), and every 5,000 changes
		// besides; every change in the last thousand.
		if tab := x.tab.Load(); tab != lastTab || i%5000 == 0 || i > 99_000 {
			lastTab = tab
			if x.len() != len(want) {
				t.Fatalf("len() = %d, want %d", x.len(), len(want))
			}
			for g := range 3 {
				for j := range keys {
					p := pair{gName[g], kName[j]}
					if got := x.get(t, p.g, p.k); got != want[p] {
						t.Fatalf("get(%v) = %p, want %p", p, got, want[p])
					}
				}
			}
		}
	}
	if got := len(x.tab.Load().slots); got >= largest/8 {
		t.Errorf("the table has %d slots for %d entries; at its largest it had %d", got, x.len(), largest)
	}
}

// TestIndexReadersNeverMissALiveKey has readers look up pairs that are
// never removed while a writer adds, replaces and removes others, making
// the table grow, fill with tombstones and shrink: a lock-free reader must
// find every pair that is there throughout (and -race checks the
// publication of tables and entries).
func TestIndexReadersNeverMissALiveKey(t *testing.T) {
	x := newIndex()
	const stable = 16
	for i := range stable {
		x.put(x.entry(fmt.Sprint("g", i%2), fmt.Sprint("stable-", i), i))
	}
	// The readers share the groups, made before they start.
	x.group("churn")
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := 0; !done.Load(); i++ {
				g, k := fmt.Sprint("g", i%stable%2), fmt.Sprint("stable-", i%stable)
				grp := x.groups[g]
				e := x.index.get(keyHash(&x.h, grp.seed, k), grp, k)
				if e == nil || e.value != i%stable {
					t.Errorf("get(%q, %q) = %v during writes", g, k, e)
					return
				}
			}
		})
	}
	churn := make([]*entry[string, string, int], 0, 2000)
	for round := range 4 { // each round grows the table, fills it with tombstones and shrinks it
		for i := range cap(churn) {
			e := x.entry("churn", fmt.Sprint("churn-", round, "-", i), i)
			x.put(e)
			churn = append(churn, e)
		}
		for _, e := range churn {
			x.remove(e)
		}
		churn = churn[:0]
	}
	done.Store(true)
	wg.Wait()
}

// TestIndexComparesGroupsAndKeysWhole gives a pair's slot the hash of other
// pairs, as a collision would: another key of the same group, the same key
// of another group, another key of another group. The slot's hash only
// spares probes a look at entries; the index answers the other pairs with
// nothing, never with the entry it does not hold. (A decision cache keyed
// this way would otherwise serve one token's answer to another.)
func TestIndexComparesGroupsAndKeysWhole(t *testing.T) {
	for _, other := range []struct{ g, k string }{
		{"alice", "orders/delete"},
		{"mallory", "orders/read"},
		{"mallory", "orders/delete"},
	} {
		t.Run(other.g+"/"+other.k, func(t *testing.T) {
			x := newIndex()
			alice := x.entry("alice", "orders/read", 1)
			x.put(alice)
			grp := x.group(other.g)
			collide := keyHash(&x.h, grp.seed, other.k)
			if byValue := keyHash(&x.h, groupHash(&x.h, other.g), other.k); byValue != collide {
				t.Fatal("a group's handle and its value hash a key differently")
			}
			tab := x.tab.Load()
			found := false
			for i := range tab.slots {
				if s := &tab.slots[i]; s.e.Load() == alice {
					s.hash.Store(collide)
					found = true
				}
			}
			if !found {
				t.Fatal("the entry is in no slot")
			}
			if e := x.get(t, other.g, other.k); e != nil {
				t.Fatalf("get of a pair the index does not hold, whose hash its entry's slot carries, = %v", e)
			}
			mine := x.entry(other.g, other.k, 2)
			if old := x.put(mine); old != nil {
				t.Fatalf("put of a new pair whose hash collides replaced %v", old)
			}
			if e := x.get(t, other.g, other.k); e != mine {
				t.Fatalf("get = %v, want its own entry", e)
			}
			if x.len() != 2 {
				t.Fatalf("len() = %d, want 2", x.len())
			}
		})
	}
}

// TestCollidingGroupsServeNothingOfEachOther is the same through a whole
// cache: two tokens' entries forced into one hash, read both ways, by
// value and through handles, are each a miss for the other.
func TestCollidingGroupsServeNothingOfEachOther(t *testing.T) {
	c := testkit.Must(New[string, string, string](16))(t)
	c.Add("alice", "orders/read", "GRANT", time.Hour, 0)
	mallory := c.Pin("mallory")
	defer mallory.Unpin()
	collide := keyHash(&c.keys, mallory.seed, "orders/read")
	tab := c.idx.tab.Load()
	for i := range tab.slots {
		if s := &tab.slots[i]; s.e.Load() != nil {
			s.hash.Store(collide)
		}
	}
	if v, ok := c.Get("mallory", "orders/read"); ok {
		t.Fatalf("mallory reads alice's %q by value", v)
	}
	if v, ok := mallory.Get("orders/read"); ok {
		t.Fatalf("mallory reads alice's %q through a handle", v)
	}
	c.Add("mallory", "orders/read", "DENY", time.Hour, 0)
	for name, get := range map[string]func() (string, bool){
		"by value":       func() (string, bool) { return c.Get("mallory", "orders/read") },
		"through handle": func() (string, bool) { return mallory.Get("orders/read") },
	} {
		if v, ok := get(); !ok || v != "DENY" {
			t.Errorf("mallory %s reads %q, %v, want DENY", name, v, ok)
		}
	}
	// Alice's slot carries mallory's hash now: her lookup may miss, and
	// must not read mallory's entry.
	if v, ok := c.Get("alice", "orders/read"); ok && v != "GRANT" {
		t.Errorf("alice reads %q", v)
	}
}
