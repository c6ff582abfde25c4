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

// TestRWMutexExcludesWriters has readers on many goroutines check an
// invariant a writer breaks only while it holds the lock: a reader that
// shared its cell with a writer would see it broken (and -race would see
// the unsynchronised access).
func TestRWMutexExcludesWriters(t *testing.T) {
	var (
		mu   stripe.RWMutex
		a, b int // equal whenever no writer holds mu
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				cell := mu.RLock()
				if a != b {
					t.Error("a reader saw a writer's half-done change")
				}
				mu.RUnlock(cell)
			}
		})
	}
	wg.Go(func() {
		for range 500 {
			mu.Lock()
			a++
			b++
			mu.Unlock()
		}
	})
	wg.Wait()
	if a != 500 || b != 500 {
		t.Fatalf("a, b = %d, %d, want 500", a, b)
	}
}
