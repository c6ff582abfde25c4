package pep

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkPurge purges a token of 10 entries from decision caches that
// hold ever more entries of other tokens: the cost must not grow with them
// (issue 11, break 3: a purge walked the whole cache under its lock).
func BenchmarkPurge(b *testing.B) {
	for _, others := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			d, err := newDecisionCache(others+10, 1<<40, time.Hour, time.Hour, nil)
			require.NoError(b, err)
			granted := func(scopes ...string) *answer {
				a := &answer{}
				for _, s := range scopes {
					i := a.add(pair{resource: "orders", scope: s})
					a.entries[i].l = listing{status: Grant, count: 1}
				}
				return a
			}
			var ten []string
			for i := range 10 {
				ten = append(ten, fmt.Sprint("s", i))
			}
			ds := granted(ten...)
			for i := range others {
				cl := &call{id: tokenIdent{Scheme: schemeBearer, Token: fmt.Sprint("other-token-", i%1000)}, ctxKey: noContext}
				w := d.writer(cl)
				d.store(w, cl, granted(fmt.Sprint("s", i)))
				w.Close()
			}
			victim := &call{id: tokenIdent{Scheme: schemeBearer, Token: "victim-token"}, ctxKey: noContext}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				w := d.writer(victim)
				d.store(w, victim, ds)
				w.Close()
				b.StartTimer()
				d.purge(victim.id)
			}
		})
	}
}
