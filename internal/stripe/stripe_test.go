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
