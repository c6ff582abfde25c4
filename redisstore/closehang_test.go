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
// 2 s by default) even when ctx has no deadline.

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore"
)

func TestCloseDoesNotWaitForAPurgeWithoutDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ReadTimeout: -1, WriteTimeout: -1})
	gw := startGateway(t)
	c, err := pep.New(gw.URL, realm, app, pep.WithHTTPClient(gw.Client()),
		pep.WithInvalidator(redisstore.NewInvalidator(rdb, "attack:closehang")))
	require.NoError(t, err)
	purged := make(chan error, 1)
	go func() { purged <- c.Purge(context.Background(), "some-token") }()
	time.Sleep(200 * time.Millisecond)
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
	_ = ln.Close()
	<-accepted
	for _, k := range conns {
		_ = k.Close()
	}
	<-closed
	<-purged
	require.False(t, hung, "Close did not return within 5 s: it waits for a Purge whose ctx has no deadline")
}
