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
	<-bus.Joined
	bus.Beat(time.Now()) // fresh for the whole run
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

// BenchmarkUncachedCheckInvalidator is an uncached Check (every one asks
// the gateway) with an invalidator attached beside one without: the
// client's own token, whose digest on the channel is made once at
// SetToken, and a per-call token, whose digest is made per request, for
// the request's flight (so that another replica's purge retires it).
func BenchmarkUncachedCheckInvalidator(b *testing.B) {
	g := startBenchGateway(b, nil)
	tok := g.token(b)
	bus := newLongBus()
	withInv := g.newClient(b, uncached, pep.WithInvalidator(bus))
	b.Cleanup(func() { _ = withInv.Close() })
	<-bus.Joined
	plain := g.newClient(b, uncached)
	b.Cleanup(func() { _ = plain.Close() })
	for _, tt := range []struct {
		name string
		c    *pep.Client
	}{{"client", plain}, {"client-invalidator", withInv}} {
		b.Run(tt.name+"/own-token", func(b *testing.B) {
			tt.c.SetToken(tok)
			benchChecks(b, context.Background(), tt.c)
		})
		b.Run(tt.name+"/per-call-token", func(b *testing.B) {
			benchChecks(b, pep.WithToken(context.Background(), tok), tt.c)
		})
	}
}
