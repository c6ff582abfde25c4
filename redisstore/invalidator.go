package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orgauthz/orgauthz/invalidation"
)

// DefaultChannel is the Redis channel an Invalidator made with an empty
// channel name uses.
const DefaultChannel = "orgauthz:invalidations"

// The Invalidator's heartbeat: a PING on the subscription's connection
// every heartbeatEvery, at most maxPending unanswered. A subscription that
// reads nothing for readTimeout (eight heartbeats) is taken as broken and
// made again.
const (
	heartbeatEvery = 250 * time.Millisecond
	maxPending     = 64
	readTimeout    = 8 * heartbeatEvery
	// The pauses between attempts to subscribe after a break.
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
)

// Invalidator carries the cache purges of pep and authzen clients between
// replicas over Redis pub/sub (pep.WithInvalidator,
// authzen.WithInvalidator): Publish is a PUBLISH on the channel, and
// Subscribe keeps a subscription to it, sending a PING on the
// subscription's own connection every 250 ms. Redis answers a PING after
// every message it pushed to that connection before it, so a PONG says
// that every purge published before the PING was sent has been received:
// that is the heartbeat (invalidation.Receiver.Heartbeat), stamped with
// when the PING was sent. A client trusts its cache for
// invalidation.DefaultTrust (2 s) after a heartbeat was sent.
//
// A subscription that fails, or that reads nothing for 2 s, is reported
// lost (the client stops serving its cache) and made again, after a pause
// that grows from 50 ms to 2 s; Redis restarting, or failing over under
// Sentinel, needs nothing of the replicas. It works with any
// redis.UniversalClient: a single server, Sentinel, or a Cluster (whose
// classic pub/sub reaches every node's subscribers).
//
// An Invalidator is safe for concurrent use, and one may serve several
// clients, each Subscribe call holding a connection of its own.
type Invalidator struct {
	client  redis.UniversalClient
	channel string
}

// NewInvalidator returns an Invalidator on channel (DefaultChannel when
// empty) through client, which the caller keeps and closes. Every replica
// of a service must use the same channel; services whose caches must not
// purge each other use different ones. A nil client makes every Publish and
// Subscribe fail.
func NewInvalidator(client redis.UniversalClient, channel string) *Invalidator {
	if channel == "" {
		channel = DefaultChannel
	}
	return &Invalidator{client: client, channel: channel}
}

var _ invalidation.Invalidator = (*Invalidator)(nil)

// errNoClient is the error of an Invalidator without a client.
var errNoClient = errors.New("redisstore: the Invalidator has no Redis client; pass one to NewInvalidator")

// Publish publishes msg on the channel and returns once Redis answered.
// It honours ctx's deadline only if the client was made with
// ContextTimeoutEnabled (otherwise go-redis waits for its ReadTimeout).
func (v *Invalidator) Publish(ctx context.Context, msg []byte) error {
	if v.client == nil {
		return errNoClient
	}
	if err := v.client.Publish(ctx, v.channel, msg).Err(); err != nil {
		return fmt.Errorf("redisstore: publishing an invalidation: %w", err)
	}
	return nil
}

// Subscribe subscribes to the channel and reports its messages and
// heartbeats to r until ctx is done, making the subscription again, after
// r.Lost, whenever it breaks. It returns ctx's error.
func (v *Invalidator) Subscribe(ctx context.Context, r invalidation.Receiver) error {
	if v.client == nil {
		return errNoClient
	}
	pause := retryMin
	for ctx.Err() == nil {
		beat, err := v.session(ctx, r)
		if ctx.Err() != nil {
			break
		}
		r.Lost(err)
		if beat {
			pause = retryMin
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		pause = min(2*pause, retryMax)
	}
	return ctx.Err()
}

// session runs one subscription until it breaks or ctx is done, and
// reports why it ended and whether it delivered a heartbeat.
func (v *Invalidator) session(ctx context.Context, r invalidation.Receiver) (beat bool, err error) {
	ps := v.client.Subscribe(ctx)
	defer func() { _ = ps.Close() }()
	if err := ps.Subscribe(ctx, v.channel); err != nil {
		return false, fmt.Errorf("redisstore: subscribing to the invalidation channel: %w", err)
	}

	// pending maps the payload of each unanswered PING to when it was
	// sent; the pinger stops when the session ends.
	var (
		mu      sync.Mutex
		pending = make(map[uint64]time.Time)
		seq     uint64
		wg      sync.WaitGroup
	)
	sctx, stop := context.WithCancel(ctx)
	defer wg.Wait()
	defer stop()
	// A read waits for its timeout, not for ctx: closing the
	// subscription ends it at once.
	context.AfterFunc(sctx, func() { _ = ps.Close() })
	ping := func() error {
		mu.Lock()
		if len(pending) >= maxPending {
			mu.Unlock()
			return nil // the answers are late: the heartbeat goes stale on its own
		}
		seq++
		n := seq
		// The time is read before the PING is written: its answer comes
		// after every message Redis pushed before it read the PING.
		pending[n] = time.Now()
		mu.Unlock()
		return ps.Ping(sctx, strconv.FormatUint(n, 10))
	}
	if err := ping(); err != nil {
		return false, fmt.Errorf("redisstore: pinging the invalidation channel: %w", err)
	}
	wg.Go(func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				if ping() != nil {
					return // the receiving loop sees the break
				}
			}
		}
	})

	for {
		m, err := ps.ReceiveTimeout(sctx, readTimeout)
		if err != nil {
			return beat, fmt.Errorf("redisstore: receiving from the invalidation channel: %w", err)
		}
		switch m := m.(type) {
		case *redis.Message:
			if m.Channel == v.channel {
				r.Message([]byte(m.Payload))
			}
		case *redis.Pong:
			n, err := strconv.ParseUint(m.Payload, 10, 64)
			if err != nil {
				continue
			}
			mu.Lock()
			sent, ok := pending[n]
			for k := range pending { // answers come in order: older ones are gone
				if k <= n {
					delete(pending, k)
				}
			}
			mu.Unlock()
			if ok {
				r.Heartbeat(sent)
				beat = true
			}
		}
	}
}
