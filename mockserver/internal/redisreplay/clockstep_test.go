package redisreplay

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestKeyspaceNeverVouchesForRecordsRedissClockExpiredEarly: Redis
// expires records by its own clock, so while its clock is ahead of the
// binary's by more than the margin the store refuses every call (a
// revocation it expired early is never read "not recorded"), and once
// its clock steps back below its high-water the keyspace begins again.
// The server's side is replaymarker.Script's rule (the fake's; redisstore
// runs the script itself on redis-server and on miniredis with its clock
// stepped); this test holds the binary's side: its clock reading sent,
// the answers read.
func TestKeyspaceNeverVouchesForRecordsRedissClockExpiredEarly(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Millisecond)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	answer := redisLikeAt(func() time.Time { return time.Unix(0, clock.Load()) })
	f := startFake(t, answer)
	s := settledStore(t, "redis://"+f.addr)
	iat := now.Add(-time.Minute)

	first := testkit.Must(s.RecordOnce(t.Context(), "revoked", "w", now.Add(30*time.Minute), iat))(t)
	require.True(t, first)
	found := testkit.Must(s.Recorded(t.Context(), "revoked", iat))(t)
	require.True(t, found)

	clock.Store(now.Add(time.Hour).UnixNano()) // Redis's clock steps ahead
	_, err := s.Recorded(t.Context(), "revoked", iat)
	require.ErrorIs(t, err, errClockAhead)
	_, err = s.RecordOnce(t.Context(), "spent", "w", now.Add(30*time.Minute), iat)
	require.ErrorIs(t, err, errClockAhead)
	_, err = s.Remember(t.Context(), "proof", now.Add(time.Hour+dpop.ReplayStoreMargin))
	require.ErrorIs(t, err, errClockAhead)

	clock.Store(now.UnixNano()) // and back
	_, err = s.Recorded(t.Context(), "revoked", iat)
	require.ErrorIs(t, err, errKeyspaceNew, "Redis's clock stepped back below its high-water: the keyspace begins again")
	require.Equal(t, strconv.FormatInt(now.UnixMilli(), 10), markerAt(t, answer, "p:since"))
}
