package redisstore_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// BenchmarkInvalidationPropagation measures how long a purge takes from one
// replica to another through a real redis-server on loopback: from just
// before Publish to the other replica's Invalidator reporting the message
// (its client then applies it in a map lookup, see internal/core's
// BenchmarkDigestPurge). It reports the p50 and p99 of the runs in
// microseconds.
func BenchmarkInvalidationPropagation(b *testing.B) {
	rs := redistest.Start(b)
	pub := redisstore.NewInvalidator(rs.Client(), "bench")
	sub := redisstore.NewInvalidator(rs.Client(), "bench")
	r := &relay{got: make(chan struct{}, 1), ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = sub.Subscribe(ctx, r) })
	defer func() { cancel(); wg.Wait() }()
	<-r.ready
	msg := append([]byte{1, 't'}, make([]byte, 32)...)
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := pub.Publish(ctx, msg); err != nil {
			b.Fatal(err)
		}
		<-r.got
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Microsecond) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// relay is a Receiver that passes each message on, and says when the
// first heartbeat came.
type relay struct {
	got   chan struct{}
	ready chan struct{}
	once  sync.Once
}

func (r *relay) Message([]byte)      { r.got <- struct{}{} }
func (r *relay) Lost(error)          {}
func (r *relay) Heartbeat(time.Time) { r.once.Do(func() { close(r.ready) }) }
