package cache_test

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// ident has the shape of the decision cache's group, transport.Ident: a
// scheme and a token.
type ident struct {
	scheme uint8
	token  string
}

// scaleKey is one (group, key) of BenchmarkCacheScale, and the plain map's
// key.
type scaleKey struct {
	g ident
	k string
}

// scaleSet makes n (group, key) pairs spread over tokens groups: opaque
// 43-character tokens (32 random bytes in base64url, an OAuth access
// token's usual size) and keys of the shape pep makes (two lengths, then
// "orders/<n>" and "read").
func scaleSet(n, tokens int) []scaleKey {
	rng := rand.New(rand.NewPCG(1, 2))
	toks := make([]ident, tokens)
	for i := range toks {
		var raw [32]byte
		binary.LittleEndian.PutUint64(raw[:], rng.Uint64())
		binary.LittleEndian.PutUint64(raw[8:], rng.Uint64())
		binary.LittleEndian.PutUint64(raw[16:], rng.Uint64())
		binary.LittleEndian.PutUint64(raw[24:], uint64(i))
		toks[i] = ident{1, base64.RawURLEncoding.EncodeToString(raw[:])}
	}
	set := make([]scaleKey, n)
	for i := range set {
		res := fmt.Sprintf("orders/%d", i)
		set[i] = scaleKey{toks[i%tokens], string([]byte{0, byte(len(res)), 0, 4}) + res + "read"}
	}
	return set
}

// BenchmarkCacheScale compares a hit of the cache with a lookup in a plain
// Go map of the same keys, at sizes from 1,000 to 1,000,000 entries, in
// one token's group and spread over 100,000 tokens of one entry each. Each
// size runs the map ("map"), the map with the clock reading every hit of a
// cache that expires entries makes ("map-clock", the floor of such a
// cache), then the cache read by group value
// ("cache", what a per-call token costs: the group is looked up by its
// token on every hit) and, for one token, through a pinned handle
// ("pinned", what a client's own token costs) against a map of the keys
// alone ("map-keys"), in that order in one run. The lookups follow one
// random order of all keys, the same for the map and the cache, so that
// at the larger sizes most of them miss the CPU's caches, as a large
// cache's do; the probe keys are copies laid out in that order, so that
// reading them costs little beside the lookup. B/entry is what building
// the structure grew the live heap by, divided by the entries, the keys' and tokens' own bytes included
// (each structure holds copies of its own: one per key, one per token).
// Every sub-benchmark collects garbage after its build, so that no
// collection the build started marks its heap during the timed loop.
func BenchmarkCacheScale(b *testing.B) {
	for _, sc := range []struct{ entries, tokens int }{
		{1_000, 1}, {100_000, 1}, {1_000_000, 1}, {100_000, 100_000},
	} {
		// The keys are made when a sub-benchmark of the size first runs,
		// so that a -bench pattern that skips a size does not pay for it.
		keys := sync.OnceValues(func() (set, probes []scaleKey) {
			set = scaleSet(sc.entries, sc.tokens)
			// probes are the keys in one random order, copies laid out
			// in that order, so that reading the next probe costs
			// neither structure a cache miss of its own.
			probes = make([]scaleKey, len(set))
			for i, j := range rand.New(rand.NewPCG(3, 4)).Perm(len(set)) {
				tok := set[j].g.token
				if sc.tokens > 1 {
					tok = clone(tok)
				}
				probes[i] = scaleKey{ident{set[j].g.scheme, tok}, clone(set[j].k)}
			}
			return set, probes
		})
		name := fmt.Sprintf("entries=%d/tokens=%d", sc.entries, sc.tokens)
		b.Run(name+"/map", func(b *testing.B) {
			set, probes := keys()
			before := testkit.LiveHeap()
			m := scaleMap(set)
			perEntry := float64(testkit.LiveHeap()-before) / float64(len(set))
			i := 0
			for b.Loop() {
				if !m[probes[i]] {
					b.Fatal("want a hit")
				}
				if i++; i == len(probes) {
					i = 0
				}
			}
			b.ReportMetric(perEntry, "B/entry")
			runtime.KeepAlive(m)
		})
		// map-clock is the map and a reading of the monotonic clock each
		// hit, the least any cache that expires its entries does and stays
		// right in a process frozen for an hour (see the cache's clock).
		// The reading costs more than its own time: it waits for the
		// loads before it, so that the lookups of a loop no longer
		// overlap their cache misses, as the map's do.
		b.Run(name+"/map-clock", func(b *testing.B) {
			set, probes := keys()
			m := scaleMap(set)
			runtime.GC() // the collection the build started ends before the timed loop
			epoch := time.Now()
			i := 0
			for b.Loop() {
				if !m[probes[i]] || time.Since(epoch) < 0 {
					b.Fatal("want a hit")
				}
				if i++; i == len(probes) {
					i = 0
				}
			}
		})
		b.Run(name+"/cache", func(b *testing.B) {
			set, probes := keys()
			before := testkit.LiveHeap()
			c, err := cache.New[ident, string, bool](len(set))
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range set {
				c.Add(ident{k.g.scheme, clone(k.g.token)}, clone(k.k), true, time.Hour, int64(len(k.g.token)+len(k.k)))
			}
			perEntry := float64(testkit.LiveHeap()-before) / float64(len(set))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := c.Get(probes[i].g, probes[i].k); !ok {
					b.Fatal("want a hit")
				}
				if i++; i == len(probes) {
					i = 0
				}
			}
			b.ReportMetric(perEntry, "B/entry")
			if c.Len() != len(set) {
				b.Fatalf("the cache holds %d entries, want %d", c.Len(), len(set))
			}
		})
		if sc.tokens != 1 {
			continue
		}
		b.Run(name+"/map-keys", func(b *testing.B) {
			set, probes := keys()
			m := make(map[string]bool)
			for _, k := range set {
				m[clone(k.k)] = true
			}
			runtime.GC() // the collection the build started ends before the timed loop
			i := 0
			for b.Loop() {
				if !m[probes[i].k] {
					b.Fatal("want a hit")
				}
				if i++; i == len(probes) {
					i = 0
				}
			}
		})
		b.Run(name+"/pinned", func(b *testing.B) {
			set, probes := keys()
			c, err := cache.New[ident, string, bool](len(set))
			if err != nil {
				b.Fatal(err)
			}
			g := c.Pin(set[0].g)
			defer g.Unpin()
			for _, k := range set {
				c.Add(k.g, clone(k.k), true, time.Hour, int64(len(k.g.token)+len(k.k)))
			}
			runtime.GC() // the collection the build started ends before the timed loop
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := g.Get(probes[i].k); !ok {
					b.Fatal("want a hit")
				}
				if i++; i == len(probes) {
					i = 0
				}
			}
		})
	}
}

// scaleMap returns the plain map of BenchmarkCacheScale: set's pairs in a
// Go map, with its own copy of each key and one of each token, as the cache
// keeps them.
func scaleMap(set []scaleKey) map[scaleKey]bool {
	m := make(map[scaleKey]bool)
	own := make(map[string]string)
	for _, k := range set {
		t, ok := own[k.g.token]
		if !ok {
			t = clone(k.g.token)
			own[k.g.token] = t
		}
		m[scaleKey{ident{k.g.scheme, t}, clone(k.k)}] = true
	}
	return m
}

// clone returns a copy of s in memory of its own.
func clone(s string) string { return string([]byte(s)) }
