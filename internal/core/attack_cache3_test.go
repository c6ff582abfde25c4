package core

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// The decision cache now counts its own copy of a token in the token's
// group (cache.groupStore), and Writer.Add still counts the token's bytes
// again in every entry of it: a client of one long token holds a small
// fraction of what WithCacheMaxBytes says it may, every decision past that
// evicted. With a 4 KiB token and a 1 MiB bound, the cache holds about 240
// decisions taking about 60 KB.
func TestAttackTokenCountedInEveryEntryAndItsGroup(t *testing.T) {
	const bound = 1 << 20
	d, err := newDecisions(&Settings{CacheSize: 100_000, CacheMaxBytes: bound, AllowTTL: time.Hour, DenyTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id := transport.Ident{Scheme: transport.SchemeBearer, Token: strings.Repeat("t", 4096)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pin := d.pin(id)
	w := d.writer(id)
	for i := range 4000 {
		w.Add(fmt.Sprintf("\x00\x08\x00\x04orders/%05dread", i), true)
	}
	w.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	_, n, bytes := d.stats()
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d of 4000 decisions held; Bytes %d (bound %d); heap grew %d", n, bytes, bound, grown)
	// Each decision's entry, key copy and index share take under 300
	// bytes: 4000 of them fit in a third of the bound.
	if n < 4000 {
		t.Errorf("the cache holds %d of 4000 decisions (heap %d bytes) under a %d-byte bound: it counts %d bytes a decision", n, grown, bound, bytes/int64(n))
	}
	pin.Unpin()
}
