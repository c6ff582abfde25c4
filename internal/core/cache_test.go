package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
