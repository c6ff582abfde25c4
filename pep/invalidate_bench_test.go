package pep_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/pep"
)

// BenchmarkCachedCheckInvalidator is a cached Check with an invalidator
// attached (its heartbeat always fresh) beside one without and beside a
// map behind a sync.Mutex, serially and in parallel: the invalidator adds
// one atomic load and a reading of the monotonic clock to a hit.
func BenchmarkCachedCheckInvalidator(b *testing.B) {
	g := startBenchGateway(b, nil)
	tok := g.token(b)
	ctx := context.Background()
	plain := g.newClient(b, pep.WithCache(pep.DefaultCacheSize, time.Hour, time.Hour))
	b.Cleanup(func() { _ = plain.Close() })
	bus := newLongBus()
	withInv := g.newClient(b, pep.WithCache(pep.DefaultCacheSize, time.Hour, time.Hour), pep.WithInvalidator(bus))
	b.Cleanup(func() { _ = withInv.Close() })
	<-bus.joined
	bus.beat(time.Now()) // fresh for the whole run
	for _, c := range []*pep.Client{plain, withInv} {
		c.SetToken(tok)
		for range 2 {
			d, err := c.Check(ctx, "orders", "read")
			mustGrant(b, d, err)
		}
	}
	var mu sync.Mutex
	m := map[pep.CacheKey]pep.Status{pep.NewCacheKey(tok, "orders", "read"): pep.Grant}
	mutexMap := func() bool {
		mu.Lock()
		s, ok := m[pep.NewCacheKey(tok, "orders", "read")]
		mu.Unlock()
		return ok && s == pep.Grant
	}
	check := func(c *pep.Client) func() bool {
		return func() bool {
			d, err := c.Check(ctx, "orders", "read")
			return err == nil && d.Cached && d.Allowed()
		}
	}
	benchHits(b, []benchHit{{"mutexmap", mutexMap}, {"client", check(plain)}, {"client-invalidator", check(withInv)}})
}
