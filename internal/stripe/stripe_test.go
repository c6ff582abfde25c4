package stripe_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/internal/stripe"
)

func TestCounterCountsEveryAddition(t *testing.T) {
	t.Parallel()
	var c stripe.Counter
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Add(1)
			}
		})
	}
	wg.Wait()
	c.Add(5)
	assert.Equal(t, uint64(8005), c.Load())
}

func BenchmarkAdd(b *testing.B) {
	var c stripe.Counter
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(1)
		}
	})
}

// Readers on any cell see a writer's changes whole, never half made; the
// race detector checks that every access is ordered by the lock.
func TestRWMutexExcludesWritersFromEveryCell(t *testing.T) {
	t.Parallel()
	var (
		m    stripe.RWMutex
		x, y int // a writer keeps them equal
		wg   sync.WaitGroup
	)
	for w := range 2 {
		wg.Go(func() {
			for i := range 500 {
				m.Lock()
				x = w*1000 + i
				y = x
				m.Unlock()
			}
		})
	}
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				cell := m.RLock()
				a, b := x, y
				m.RUnlock(cell)
				if a != b {
					t.Errorf("a reader saw %d and %d", a, b)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkRWMutexRLock compares a read of a shared word under the
// striped lock and under a sync.RWMutex; run it with -cpu 1,2.
func BenchmarkRWMutexRLock(b *testing.B) {
	var m stripe.RWMutex
	var std sync.RWMutex
	shared := 1
	b.Run("stripe", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				cell := m.RLock()
				v := shared
				m.RUnlock(cell)
				if v != 1 {
					b.Error("changed")
				}
			}
		})
	})
	b.Run("sync", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				std.RLock()
				v := shared
				std.RUnlock()
				if v != 1 {
					b.Error("changed")
				}
			}
		})
	})
}
