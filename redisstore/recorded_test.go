package redisstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// A ReplayStore is what replicas of the reference server share in process.
var _ mockserver.SharedStore = (*ReplayStore)(nil)

// TestReplayStoreRecorded: what one replica records with Remember (a
// revocation, a spent code, a logout) is what another reads with Recorded,
// until it expires; a keyspace younger than the record asked about (Redis
// lost its keys after the token was issued), or new, cannot vouch that
// nothing was recorded, and the read fails; Redis down fails it too.
func TestReplayStoreRecorded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	a, b := NewReplayStore(c, "t:"), NewReplayStore(failFast(t, srv), "t:")
	ctx := t.Context()
	since := time.Now().Add(-time.Minute)

	_, err := b.Recorded(ctx, "k", since)
	require.ErrorIs(t, err, errKeyspaceNew, "a new keyspace vouches for nothing before it")
	require.ErrorIs(t, err, dpop.ErrKeyspaceNew, "the server refuses the credential for good, not as an outage")
	settled(t, c, a.prefix)
	found := testkit.Must(b.Recorded(ctx, "k", since))(t)
	require.False(t, found)
	first := testkit.Must(a.Remember(ctx, "k", time.Now().Add(time.Hour)))(t)
	require.True(t, first)
	found = testkit.Must(b.Recorded(ctx, "k", since))(t)
	require.True(t, found, "recorded by the other replica")
	n := testkit.Must(c.DBSize(ctx).Result())(t)
	require.EqualValues(t, 2, n, "the record and the marker: reading writes nothing")

	require.NoError(t, c.Set(ctx, a.since, time.Now().UnixMilli(), 0).Err()) // the keyspace begins now
	_, err = b.Recorded(ctx, "k", since)
	require.ErrorIs(t, err, errKeyspaceNew, "a record older than the keyspace")
	found = testkit.Must(b.Recorded(ctx, "k", time.Now().Add(dpop.ReplayStoreMargin+time.Second)))(t, "a record a margin younger than the keyspace")
	require.True(t, found)

	srv.Stop()
	_, err = b.Recorded(ctx, "k", since)
	require.Error(t, err)
	require.NotErrorIs(t, err, errKeyspaceNew)
}

// TestReplayStoreRecordOnceDecidesBeforeWriting: a one-time record (a
// code's spend, a revocation, a sign-out) of something issued at since is
// written only once the keyspace is found to vouch for since: a keyspace
// that began within the margin before since, or after, fails the call with
// nothing written, so its retry is not refused as "already recorded". No
// DPoP proof window applies: once the keyspace vouches, the first call
// records and another writer's finds the record.
func TestReplayStoreRecordOnceDecidesBeforeWriting(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := failFast(t, srv)
	s := NewReplayStore(c, "t:")
	ctx := t.Context()
	require.NoError(t, c.Set(ctx, s.since, time.Now().Add(-30*time.Second).UnixMilli(), 0).Err()) // Redis restarted 30 s ago
	issued := time.Now()
	until := issued.Add(2 * time.Minute)
	for _, attempt := range []string{"the call", "its retry"} {
		_, err := s.RecordOnce(ctx, "k", "w", until, issued)
		require.ErrorIs(t, err, errKeyspaceNew, attempt)
		n := testkit.Must(c.Exists(ctx, s.prefix+"k").Result())(t)
		require.Zero(t, n, "%s wrote the record", attempt)
	}
	settled(t, c, s.prefix)
	first := testkit.Must(s.RecordOnce(ctx, "k", "w", until, issued))(t)
	require.True(t, first)
	first = testkit.Must(s.RecordOnce(ctx, "k", "other", until, issued))(t)
	require.False(t, first, "recorded already, by another writer")
	found := testkit.Must(s.Recorded(ctx, "k", issued))(t)
	require.True(t, found)

	srv.Stop()
	_, err := s.RecordOnce(ctx, "k2", "w", until, issued)
	require.Error(t, err)
	require.NotErrorIs(t, err, errKeyspaceNew)
}

// TestReplayStoreRecordOnceTakesEveryTextOfTheMarkersTime: a marker
// written by hand (the docs let an operator set it earlier) as "+N", "0N"
// or "-0" is the time N (or 0) for every read of it, RecordOnce's second
// read included: a keyspace that vouches for reads vouches for one-time
// records too, call after call.
func TestReplayStoreRecordOnceTakesEveryTextOfTheMarkersTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	ctx := t.Context()
	hourAgo := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	for i, text := range []string{"+" + hourAgo, "0" + hourAgo, "-0"} {
		t.Run(text, func(t *testing.T) {
			s := NewReplayStore(c, "t"+strconv.Itoa(i)+":")
			require.NoError(t, c.Set(ctx, s.since, text, 0).Err())
			issued := time.Now().Add(-time.Minute)
			testkit.Must(s.Recorded(ctx, "k", issued))(t, "the keyspace vouches for reads")
			first := testkit.Must(s.RecordOnce(ctx, "k", "w", time.Now().Add(time.Hour), issued))(t)
			require.True(t, first)
			first = testkit.Must(s.RecordOnce(ctx, "k", "other", time.Now().Add(time.Hour), issued))(t)
			require.False(t, first, "recorded already, by another writer")
		})
	}
}

// failFast returns a client of srv, closed in t's cleanup, that makes one
// attempt per command and one dial: a call while srv is stopped fails at
// once with the refused connection, where the default client spends some
// 3.4 s retrying it (3 retries of 5 dials 100 ms apart) before the same
// error. For tests that stop srv and only ask that the call fails.
func failFast(t *testing.T, srv *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
