package pep_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestOneRefusalAndAShortOutagePurgeThatTokenOnly: one refused token
// while the channel is down for 2 s is published as that token's purge once
// the channel is back, not as a purge of every replica's cache: the
// publisher's own pauses between tries (200 ms up to 1 s) are no wait for a
// publisher (a-fix10c F2: they aged the refusal past the one second after
// which a backlog becomes a purge of every cache).
func TestOneRefusalAndAShortOutagePurgeThatTokenOnly(t *testing.T) {
	t.Parallel()
	inv := &gatedPublisher{up: time.Now().Add(2 * time.Second)}
	c := refusedClient(t, inv)
	_, err := c.Check(pep.WithToken(t.Context(), "expired-token-1"), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	require.Eventually(t, func() bool { n, all := inv.taken(); return n >= 2 || all > 0 }, 10*time.Second, 5*time.Millisecond,
		"nothing was published after the channel came back")
	n, all := inv.taken()
	require.Zero(t, all, "one refused token and a 2 s blip purged every replica's whole cache (%d messages, overflows %d)", n, c.Stats().InvalidationRefusalOverflows)
	require.Equal(t, 2, n, "the token's own purge (identity and own digest)")
}

// TestARefusalQueuedBeforeCloseIsPublished: a replica shut down just after
// a 401 (Close as the last request is answered) still tells the other
// replicas, here over a channel that fails for its first half second:
// Close waits, at most 2 s, for the purges queued before it (a-rep13 F1:
// Close dropped them, and another replica served the revoked token's
// cached GRANT for its whole TTL).
func TestARefusalQueuedBeforeCloseIsPublished(t *testing.T) {
	t.Parallel()
	inv := &gatedPublisher{up: time.Now().Add(500 * time.Millisecond)}
	c := refusedClient(t, inv)
	_, err := c.Check(pep.WithToken(t.Context(), "revoked-token"), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	require.NoError(t, c.Close())
	n, all := inv.taken()
	require.Equal(t, 2, n, "the refused token's purge (identity and own digest) was not published before Close returned")
	require.Zero(t, all)
}
