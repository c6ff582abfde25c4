package redisstore_test

// TestCloseDoesNotWaitForAPurgeWithoutDeadline (issue 24, found by the
// second attack). Before the fix: Close waits for the publications under
// way (core.closeReplicas: r.pubs.Wait), and a Purge's publication lasts
// as long as the caller's ctx, which may have no deadline. With Redis
// frozen (a listener that accepts and never answers) and a client whose
// timeouts are off, Purge(context.Background()) never returns, and Close,
// called by the service's shutdown, never returns either. pep's Close
// says it does not wait for the calls under way. (With go-redis's default
// timeouts, Close waits about 4.8 s, until go-redis gives up.) Promise:
// every publication is bounded by the client's timeout (WithTimeout,
// 2 s by default; 300 ms here) even when ctx has no deadline.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

func TestCloseDoesNotWaitForAPurgeWithoutDeadline(t *testing.T) {
	t.Parallel()
	addr, release := redistest.Frozen(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: -1, WriteTimeout: -1})
	gw := startGateway(t)
	// The client's timeout, which bounds the publication, is short (the
	// default, 2 s, bounds it the same way): Close waits for it, not for
	// the Purge's ctx, which has no deadline.
	const timeout = 300 * time.Millisecond
	inv := &publishSeen{Invalidator: redisstore.NewInvalidator(rdb, "attack:closehang"), seen: make(chan struct{})}
	c, err := pep.New(gw.URL, realm, app, pep.WithHTTPClient(gw.Client()), pep.WithTimeout(timeout),
		pep.WithInvalidator(inv))
	require.NoError(t, err)
	purged := make(chan error, 1)
	go func() { purged <- c.Purge(context.Background(), "some-token") }()
	<-inv.seen // the Purge's publication is under way, to a Redis that never answers
	closed := make(chan struct{})
	t0 := time.Now()
	go func() { _ = c.Close(); close(closed); t.Logf("Close returned after %v", time.Since(t0)) }()
	var hung bool
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		hung = true
	}
	// Release everything: the client's connections end, and with them the
	// publication and Close.
	_ = rdb.Close()
	release()
	<-closed
	<-purged
	require.False(t, hung, "Close did not return within 5 s: it waits for a Purge whose ctx has no deadline")
}

// publishSeen is an Invalidator that closes seen when Publish is first
// called (the client publishes only its purges through it).
type publishSeen struct {
	*redisstore.Invalidator
	once sync.Once
	seen chan struct{}
}

func (p *publishSeen) Publish(ctx context.Context, msg []byte) error {
	p.once.Do(func() { close(p.seen) })
	return p.Invalidator.Publish(ctx, msg)
}
