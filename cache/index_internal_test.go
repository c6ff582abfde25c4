package cache

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

func newIndex() *index[int, string, int] {
	x := new(index[int, string, int])
	x.init(&keying[int, string, int]{hash: newHasher[string](), tomb: new(entry[int, string, int])})
	return x
}

// TestIndexMatchesAMap puts, replaces and removes keys at random and
// requires the index to answer as a map does, through growth, tombstones
// and shrinking.
func TestIndexMatchesAMap(t *testing.T) {
	x := newIndex()
	want := map[string]*entry[int, string, int]{}
	r := rand.New(rand.NewPCG(1, 2))
	largest := 0
	for i := range 200_000 {
		// Grow to about 2,000 keys, then shrink to a few.
		keys := 2000
		if i >= 120_000 {
			keys = 20
		}
		if i == 120_000 {
			for k, e := range want {
				if n, _ := strconv.Atoi(k[1:]); n >= keys {
					x.remove(e)
					delete(want, k)
				}
			}
		}
		k := fmt.Sprint("k", r.IntN(keys))
		switch old := want[k]; {
		case r.IntN(3) == 0 && old != nil:
			if !x.remove(old) {
				t.Fatalf("remove(%q) found nothing", k)
			}
			delete(want, k)
		case r.IntN(3) == 0 && old != nil:
			// A replaced entry is no longer removed under its key.
			e := &entry[int, string, int]{key: k, value: i}
			if got := x.put(e); got != old {
				t.Fatalf("put(%q) replaced %p, want %p", k, got, old)
			}
			if x.remove(old) {
				t.Fatalf("remove of the replaced entry of %q removed something", k)
			}
			want[k] = e
		default:
			e := &entry[int, string, int]{key: k, value: i}
			if got := x.put(e); got != old {
				t.Fatalf("put(%q) replaced %p, want %p", k, got, old)
			}
			want[k] = e
		}
		largest = max(largest, len(x.tab.Load().slots))
		if i%1000 == 0 || i > 199_000 {
			if x.len() != len(want) {
				t.Fatalf("len() = %d, want %d", x.len(), len(want))
			}
			for j := range keys {
				k := fmt.Sprint("k", j)
				if got := x.get(k); got != want[k] {
					t.Fatalf("get(%q) = %p, want %p", k, got, want[k])
				}
			}
			n := 0
			x.all(func(*entry[int, string, int]) { n++ })
			if n != len(want) {
				t.Fatalf("all() visits %d entries, want %d", n, len(want))
			}
		}
	}
	if got := len(x.tab.Load().slots); got >= largest/8 {
		t.Errorf("the table has %d slots for %d entries; at its largest it had %d", got, x.len(), largest)
	}
}

// TestIndexReadersNeverMissALiveKey has readers look up keys that are
// never removed while a writer adds, replaces and removes others, making
// the table grow, fill with tombstones and shrink: a lock-free reader must
// find every key that is there throughout (and -race checks the
// publication of tables and entries).
func TestIndexReadersNeverMissALiveKey(t *testing.T) {
	x := newIndex()
	const stable = 16
	for i := range stable {
		x.put(&entry[int, string, int]{key: fmt.Sprint("stable-", i), value: i})
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := 0; !done.Load(); i++ {
				k := fmt.Sprint("stable-", i%stable)
				if e := x.get(k); e == nil || e.value != i%stable {
					t.Errorf("get(%q) = %v during writes", k, e)
					return
				}
			}
		})
	}
	churn := make([]*entry[int, string, int], 0, 2000)
	for round := range 10 {
		for i := range cap(churn) {
			e := &entry[int, string, int]{key: fmt.Sprint("churn-", round, "-", i)}
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

// TestIndexComparesWholeKeys gives a key's slot the hash of another key,
// as a collision of the two would: the slot's hash only spares probes a
// look at entries, and the index answers the other key with nothing, never
// with the entry it does not hold. (A decision cache keyed this way would
// otherwise serve one key's answer for the other.)
func TestIndexComparesWholeKeys(t *testing.T) {
	x := newIndex()
	alice := &entry[int, string, int]{key: "alice/orders/read", value: 1}
	x.put(alice)
	collide := hash(&x.k.hash, "mallory/orders/read")
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
	if e := x.get("mallory/orders/read"); e != nil {
		t.Fatalf("get of a key the index does not hold, whose hash its entry's slot carries, = %v", e)
	}
	other := &entry[int, string, int]{key: "mallory/orders/read", value: 2}
	if old := x.put(other); old != nil {
		t.Fatalf("put of a new key whose hash collides replaced %v", old)
	}
	if e := x.get("mallory/orders/read"); e != other {
		t.Fatalf("get(mallory) = %v, want its own entry", e)
	}
	if x.len() != 2 {
		t.Fatalf("len() = %d, want 2", x.len())
	}
}
