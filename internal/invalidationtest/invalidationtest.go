// Package invalidationtest is the clients' tests' in-process invalidation
// channel (an invalidation.Invalidator): every publication, and every
// heartbeat, break and delivery the test makes, reaches every subscriber,
// one at a time, in order. It is imported by tests only.
package invalidationtest

import (
	"context"
	"sync"
	"time"

	"github.com/orgauthz/orgauthz/invalidation"
)

// Bus is an in-process invalidation channel. Set its fields before a
// client subscribes; its methods are safe for concurrent use.
type Bus struct {
	// Trust is the trust window of its heartbeats: invalidation.DefaultTrust
	// when zero. A test on the real clock sets it long, so that a loaded
	// machine does not outrun the window.
	Trust time.Duration
	// PublishErr, when not nil, is what every Publish returns, publishing
	// nothing.
	PublishErr error
	// Joined receives a value each time a client subscribes.
	Joined chan struct{}

	mu        sync.Mutex
	subs      []invalidation.Receiver
	published [][]byte
}

// New returns a Bus with the default trust window.
func New() *Bus { return &Bus{Joined: make(chan struct{}, 16)} }

// NewLong returns a Bus whose heartbeats are good for an hour.
func NewLong() *Bus {
	b := New()
	b.Trust = time.Hour
	return b
}

// TrustWindow returns Trust, or invalidation.DefaultTrust when it is zero.
func (b *Bus) TrustWindow() time.Duration {
	if b.Trust > 0 {
		return b.Trust
	}
	return invalidation.DefaultTrust
}

// Publish records msg and delivers it to every subscriber, or returns
// PublishErr.
func (b *Bus) Publish(_ context.Context, msg []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.PublishErr != nil {
		return b.PublishErr
	}
	b.published = append(b.published, append([]byte(nil), msg...))
	for _, r := range b.subs {
		r.Message(msg)
	}
	return nil
}

// Subscribe adds r until ctx ends, sending on Joined once r is added.
func (b *Bus) Subscribe(ctx context.Context, r invalidation.Receiver) error {
	b.mu.Lock()
	b.subs = append(b.subs, r)
	b.mu.Unlock()
	b.Joined <- struct{}{}
	<-ctx.Done()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, s := range b.subs {
		if s == r {
			b.subs = append(b.subs[:i], b.subs[i+1:]...)
			break
		}
	}
	return ctx.Err()
}

// Published returns the messages published so far, in order.
func (b *Bus) Published() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]byte(nil), b.published...)
}

// Beat reports a heartbeat sent at sent to every subscriber.
func (b *Bus) Beat(sent time.Time) { b.each(func(r invalidation.Receiver) { r.Heartbeat(sent) }) }

// Lose reports a break to every subscriber.
func (b *Bus) Lose(err error) { b.each(func(r invalidation.Receiver) { r.Lost(err) }) }

// Deliver reports msg to every subscriber, as if another process had
// published it.
func (b *Bus) Deliver(msg []byte) { b.each(func(r invalidation.Receiver) { r.Message(msg) }) }

func (b *Bus) each(f func(invalidation.Receiver)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.subs {
		f(r)
	}
}
