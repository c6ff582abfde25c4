package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore"
)

// refusedSession subscribes an Invalidator on rdb and requires its first
// session to be lost, before any heartbeat, with an error that contains
// each of want (what to use instead).
func refusedSession(t *testing.T, rdb redis.UniversalClient, channel string, want ...string) {
	t.Helper()
	inv := redisstore.NewInvalidator(rdb, channel)
	rec := &sessionLog{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inv.Subscribe(ctx, rec) }()
	waitFor(t, "the session is reported lost", 10*time.Second, func() bool { _, _, lost := rec.read(); return len(lost) > 0 })
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	_, beats, lost := rec.read()
	err := lost[0]
	for _, w := range want {
		require.ErrorContains(t, err, w)
	}
	require.Zero(t, beats, "a heartbeat was reported on a refused topology")
	require.False(t, errors.Is(err, context.Canceled))
}

// firstSessionSettled waits until c's first invalidation session has
// been lost (refused: a gap) or has come up (a recovery, which trusts the
// cache). Before either, c bypasses its cache whatever its Invalidator
// does, so a test that a topology is refused must wait for it: otherwise
// an Invalidator that accepted the topology would pass by being slow.
func firstSessionSettled(t *testing.T, c *pep.Client) {
	t.Helper()
	waitFor(t, "the first invalidation session ends or comes up", 10*time.Second, func() bool {
		s := c.Stats()
		return s.InvalidationGaps+s.InvalidationRecoveries > 0
	})
}
