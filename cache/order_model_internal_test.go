package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// With no eviction and no expiry, in random orders of writers opening,
// answering (kept or not) and closing, with RemoveGroup now and then,
// whatever Get serves is the newest answer delivered for its key (by the
// writers' making), and nothing is served when the newest delivered answer
// was not kept.
func TestServedValueIsTheNewestAskedFor(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		now := time.Duration(1e12)
		c, err := New[string, string, int](1<<16, WithClock(func() time.Time { return time.Unix(0, int64(now)) }))
		if err != nil {
			t.Fatal(err)
		}
		type w struct {
			w    *Writer[string, string, int]
			made time.Duration
			id   int
		}
		var open []w
		// newest[k] is the made and kept-ness of the newest answer
		// delivered for k since the last removal.
		type ans struct {
			made time.Duration
			kept bool
			id   int
		}
		newest := map[string]ans{}
		madeOf := map[int]time.Duration{}
		id := 0
		for step := range 200 {
			now += time.Duration(1 + r.IntN(1000))
			switch op := r.IntN(10); {
			case op < 3 || len(open) == 0:
				id++
				open = append(open, w{c.Writer("g"), now, id})
				madeOf[id] = now
			case op < 8:
				x := open[r.IntN(len(open))]
				k := fmt.Sprint("k", r.IntN(3))
				kept := r.IntN(3) > 0
				ttl := time.Hour
				if !kept {
					ttl = 0
				}
				x.w.Add(k, x.id, ttl, 0)
				if a, ok := newest[k]; !ok || x.made >= a.made {
					newest[k] = ans{x.made, kept, x.id}
				}
			case op < 9:
				i := r.IntN(len(open))
				open[i].w.Close()
				open = append(open[:i], open[i+1:]...)
			default:
				c.RemoveGroup("g")
				newest = map[string]ans{}
				// writers made before are fenced: drop them from the model by
				// closing them
				for _, x := range open {
					x.w.Close()
				}
				open = nil
			}
			for k, a := range newest {
				v, ok := c.Get("g", k)
				if ok && madeOf[v] < a.made {
					t.Fatalf("seed %d step %d: %s served writer %d's value (made %v), newest answer is writer %d's (made %v, kept %v)",
						seed, step, k, v, madeOf[v], a.id, a.made, a.kept)
				}
				if ok && !a.kept && madeOf[v] <= a.made && v != a.id {
					t.Fatalf("seed %d step %d: %s served %d though the newest answer was not kept", seed, step, k, v)
				}
			}
		}
		for _, x := range open {
			x.w.Close()
		}
	}
}
