package cache

import (
	"fmt"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// BenchmarkHitParts times the parts of a pinned hit one after the other in
// one run, so that their shares can be read against a whole hit and a
// lookup in a Go map of the same 1,000 keys under the same load: the clock
// read that every hit makes (clock), the hit counter (count), the key's
// hash (hash), the probe of the index with its comparisons (probe), the
// whole hit (hit) and the map (map).
func BenchmarkHitParts(b *testing.B) {
	c := testkit.Must(New[string, string, bool](2000))(b)
	grp := c.Pin("a-43-character-opaque-token-of-the-client.")
	defer grp.Unpin()
	keys := make([]string, 1000)
	m := make(map[string]bool, len(keys))
	for i := range keys {
		res := fmt.Sprintf("orders/%d", i)
		keys[i] = string([]byte{0, byte(len(res)), 0, 4}) + res + "read"
		c.Add(grp.id, keys[i], true, time.Hour, 0)
		m[keys[i]] = true
	}
	var sink uint64
	loop := func(b *testing.B, f func(k string)) {
		i := 0
		for b.Loop() {
			f(keys[i])
			if i++; i == len(keys) {
				i = 0
			}
		}
	}
	b.Run("map", func(b *testing.B) {
		loop(b, func(k string) {
			if !m[k] {
				b.Fatal("want a hit")
			}
		})
	})
	b.Run("hit", func(b *testing.B) {
		loop(b, func(k string) {
			if _, ok := grp.Get(k); !ok {
				b.Fatal("want a hit")
			}
		})
	})
	b.Run("clock", func(b *testing.B) {
		loop(b, func(string) { sink += uint64(c.clk.elapsed()) })
	})
	b.Run("count", func(b *testing.B) {
		loop(b, func(string) { c.hits.Add(1) })
	})
	b.Run("hash", func(b *testing.B) {
		loop(b, func(k string) { sink += keyHash(&c.keys, grp.seed, k) })
	})
	b.Run("probe", func(b *testing.B) {
		loop(b, func(k string) {
			if c.idx.get(keyHash(&c.keys, grp.seed, k), grp, k) == nil {
				b.Fatal("want an entry")
			}
		})
	})
	_ = sink
}
