package cache_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// churnBytesPerAdd fills a cache bounded at max entries with distinct
// (group, key) pairs, one group each as a cache of many callers holds,
// then measures the heap allocated per Add while every Add evicts one.
func churnBytesPerAdd(t *testing.T, max int) float64 {
	c := testkit.Must(cache.New[string, string, bool](max))(t)
	names := make([]string, max+16+200)
	for i := range names {
		names[i] = fmt.Sprintf("tok-%09d", i)
	}
	for i := 0; i < max+16; i++ {
		c.Add(names[i], "k", true, time.Hour, 0)
	}
	const adds = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := 0; i < adds; i++ {
		c.Add(names[max+16+i], "k", true, time.Hour, 0)
	}
	t.Logf("bound %d: %v per Add at capacity", max, time.Since(start)/adds)
	runtime.ReadMemStats(&after)
	if c.Len() != max {
		t.Fatalf("Len = %d, want %d", c.Len(), max)
	}
	return float64(after.TotalAlloc-before.TotalAlloc) / adds
}

// TestNoRebuildOnEveryAddAtCapacity: a cache whose entry count sits at
// 2^k-1 (a bound of 1023, 4095, 16383 ... or a byte bound that a caller's
// key lengths steer there) publishes a fresh index table and a fresh group
// table on EVERY Add at capacity: rehash(n) sizes the table with zero slack
// (size/2 == n), the eviction that follows the put leaves a tombstone, so
// the next put finds used+1 > len/2 again. Each Add then allocates and
// copies O(capacity) slots under the cache's mutex.
func TestNoRebuildOnEveryAddAtCapacity(t *testing.T) {
	good := churnBytesPerAdd(t, 4096)
	bad := churnBytesPerAdd(t, 4095)
	t.Logf("bytes allocated per Add at capacity: bound 4096: %.0f, bound 4095: %.0f", good, bad)
	if bad > 4*good+1024 {
		t.Errorf("an Add to a full cache of 4095 entries allocates %.0f bytes (%.0fx a cache of 4096): every Add rehashes the whole index", bad, bad/good)
	}
}

// TestNoRebuildOnEveryAddAtTheByteBound is the same cliff reached through
// the byte bound, by one caller: pep caches DENY answers too, under a key
// that holds the request's path, and the entry counts the key's bytes. One
// token, paths of one length chosen so that the bound holds 4095 entries:
// every further request (everyone's miss) rehashes the 8192-slot index
// under the cache's lock.
func TestNoRebuildOnEveryAddAtTheByteBound(t *testing.T) {
	const keyLen = 300
	key := func(i int) string { return fmt.Sprintf("%0*d", keyLen, i) }
	// What an entry of such a key and its group count, learned from Bytes:
	// the cache counts its copy of the key itself.
	probe := testkit.Must(cache.New[string, string, bool](8))(t)
	probe.Add("one-token", key(0), false, time.Hour, 0)
	one := probe.Bytes()
	probe.Add("one-token", key(1), false, time.Hour, 0)
	perEntry := probe.Bytes() - one
	groupCost := one - perEntry
	if perEntry < keyLen || groupCost <= 0 {
		t.Fatalf("an entry of a %d-byte key counts %d bytes, its group %d", keyLen, perEntry, groupCost)
	}
	run := func(fit int64) float64 {
		c := testkit.Must(cache.New[string, string, bool](1<<20, cache.WithMaxBytes(groupCost+fit*perEntry+perEntry/2)))(t)
		for i := 0; i < int(fit)+16; i++ {
			c.Add("one-token", key(i), false, time.Hour, 0)
		}
		if int64(c.Len()) != fit {
			t.Fatalf("Len = %d, want %d", c.Len(), fit)
		}
		keys := make([]string, 200)
		for i := range keys {
			keys[i] = key(int(fit) + 16 + i)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, k := range keys {
			c.Add("one-token", k, false, time.Hour, 0)
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / float64(len(keys))
	}
	good, bad := run(4096), run(4095)
	t.Logf("bytes allocated per Add at the byte bound: 4096 entries fit: %.0f, 4095 fit: %.0f", good, bad)
	if bad > 4*good+1024 {
		t.Errorf("an Add to a cache whose byte bound holds 4095 entries allocates %.0f bytes (%.0fx one that holds 4096)", bad, bad/good)
	}
}
