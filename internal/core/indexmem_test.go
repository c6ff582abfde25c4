package core

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// BenchmarkBytesPerCachedToken measures what one cached token costs the
// heap, its cache entry and group and its share of the digest index
// together: one GRANT each of 10,000 tokens of a JWT's size (900 bytes),
// without an Invalidator and with one (whose index also finds a token by
// its own digest). Report heapB/token; run it with -benchtime 3x.
func BenchmarkBytesPerCachedToken(b *testing.B) {
	const tokens = 10_000
	pad := strings.Repeat("x", 884)
	for _, tt := range []struct {
		name string
		make func() *decisions
	}{
		{"no Invalidator", func() *decisions {
			d, err := newDecisions(&Settings{CacheSize: tokens, CacheMaxBytes: 1 << 40, AllowTTL: time.Hour, DenyTTL: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			return d
		}},
		{"Invalidator", func() *decisions { return indexed(b, tokens) }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var perToken float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				d := tt.make()
				for i := range tokens {
					store(d, bearer(fmt.Sprintf("%s%016d", pad, i)), "k")
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perToken = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / tokens
				runtime.KeepAlive(d)
			}
			b.ReportMetric(perToken, "heapB/token")
		})
	}
}
