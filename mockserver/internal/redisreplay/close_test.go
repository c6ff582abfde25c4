package redisreplay

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestACallUnderWayAtCloseClosesItsConnection (a-rep11 F1): a call in
// progress when Close ran put its connection back in the idle pool, where
// nothing closed it, and later calls went on using it. Now it is closed as
// the call ends, and calls after Close fail without dialling.
func TestACallUnderWayAtCloseClosesItsConnection(t *testing.T) {
	f := startFake(t, redisLike())
	s := settledStore(t, "redis://"+f.addr)
	hold := make(chan struct{})
	f.mu.Lock()
	f.hold = hold
	f.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := s.Remember(t.Context(), "inflight", time.Now().Add(time.Hour))
		done <- err
	}()
	// wait until the command reached the server
	require.Eventually(t, func() bool {
		for _, c := range f.commands() {
			if len(c) > 1 && c[0] == "SET" && c[1] == "p:inflight" {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	f.mu.Lock()
	f.hold = nil
	f.mu.Unlock()
	close(hold)
	require.NoError(t, <-done)
	// After Close and the call's end, the store must hold no connection.
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.open == 0
	}, 2*time.Second, 10*time.Millisecond, "Close returned, the call ended, and the store still holds %d idle connection(s) to Redis", len(s.idle))
	_, err := s.Remember(t.Context(), "after", time.Now().Add(time.Hour))
	require.ErrorIs(t, err, errClosed)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Zero(t, f.open, "a call after Close dials nothing")
}
