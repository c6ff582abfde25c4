package core

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// BenchmarkPurge purges a token of 10 entries from decision caches that
// hold ever more entries of other tokens: the cost must not grow with them
// (issue 11, break 3: a purge walked the whole cache under its lock).
func BenchmarkPurge(b *testing.B) {
	bearer := func(token string) transport.Ident {
		return transport.Ident{Scheme: transport.SchemeBearer, Token: token}
	}
	for _, others := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			d, err := newDecisions(&Settings{CacheSize: others + 10, CacheMaxBytes: 1 << 40, AllowTTL: time.Hour, DenyTTL: time.Hour})
			require.NoError(b, err)
			for i := range others {
				w := d.writer(bearer(fmt.Sprint("other-token-", i%1000)))
				w.Add(fmt.Sprint("s", i), true)
				w.Close()
			}
			victim := bearer("victim-token")
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				w := d.writer(victim)
				for i := range 10 {
					w.Add(fmt.Sprint("s", i), true)
				}
				w.Close()
				b.StartTimer()
				d.purge(victim)
			}
		})
	}
}

// TestTokenCountedOnce: each byte the decision cache holds is counted once,
// by its owner: a token's copy in its group, a key's in its entry. A
// client of one long token (4 KiB) holds as many decisions as
// WithCacheMaxBytes has room for (4000 decisions of under 300 bytes each
// in a 1 MiB bound), not one token's length a decision; and Bytes is no
// less than what the heap grew by.
func TestTokenCountedOnce(t *testing.T) {
	const bound = 1 << 20
	d := testkit.Must(newDecisions(&Settings{CacheSize: 100_000, CacheMaxBytes: bound, AllowTTL: time.Hour, DenyTTL: time.Hour}))(t)
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
	require.Equal(t, 4000, n, "decisions held under a %d-byte bound: it counts %d bytes a decision", bound, bytes/int64(max(n, 1)))
	require.LessOrEqual(t, float64(grown), 1.05*float64(bytes), "the cache holds more than it counts")
	pin.Unpin()
}

// TestWriterForgetRemovesTheOlderVerdict: an answer the caller does not
// keep (Forget) removes what was cached under its key, for this token
// only, and a nil writer (no cache) takes it without a panic.
func TestWriterForgetRemovesTheOlderVerdict(t *testing.T) {
	d := testkit.Must(newDecisions(&Settings{CacheSize: 100, CacheMaxBytes: 1 << 20, AllowTTL: time.Hour, DenyTTL: time.Hour}))(t)
	ann := transport.Ident{Scheme: transport.SchemeBearer, Token: "token-of-ann"}
	bob := transport.Ident{Scheme: transport.SchemeBearer, Token: "token-of-bob"}
	for _, id := range []transport.Ident{ann, bob} {
		w := d.writer(id)
		w.Add("orders/read", true)
		w.Add("orders/write", true)
		w.Close()
	}
	w := d.writer(ann)
	w.Forget("orders/read")
	w.Close()

	_, ok := Get(d.lookup(ann), "orders/read")
	require.False(t, ok, "the older verdict is still served")
	allowed, ok := Get(d.lookup(ann), "orders/write")
	require.True(t, ok && allowed, "another key of the token")
	allowed, ok = Get(d.lookup(bob), "orders/read")
	require.True(t, ok && allowed, "the same key of another token")

	var none *Writer
	none.Forget("orders/read")
}
