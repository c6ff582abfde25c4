package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
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
	a, b := NewReplayStore(c, "t:"), NewReplayStore(srv.Client(), "t:")
	ctx := t.Context()
	since := time.Now().Add(-time.Minute)

	_, err := b.Recorded(ctx, "k", since)
	require.ErrorIs(t, err, errKeyspaceNew, "a new keyspace vouches for nothing before it")
	settled(t, c, a)
	found, err := b.Recorded(ctx, "k", since)
	require.NoError(t, err)
	require.False(t, found)
	first, err := a.Remember(ctx, "k", time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.True(t, first)
	found, err = b.Recorded(ctx, "k", since)
	require.NoError(t, err)
	require.True(t, found, "recorded by the other replica")
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "the record and the marker: reading writes nothing")

	require.NoError(t, c.Set(ctx, a.since, time.Now().UnixMilli(), 0).Err()) // the keyspace begins now
	_, err = b.Recorded(ctx, "k", since)
	require.ErrorIs(t, err, errKeyspaceNew, "a record older than the keyspace")
	found, err = b.Recorded(ctx, "k", time.Now().Add(dpop.ReplayStoreMargin+time.Second))
	require.NoError(t, err, "a record a margin younger than the keyspace")
	require.True(t, found)

	srv.Stop()
	_, err = b.Recorded(ctx, "k", since)
	require.Error(t, err)
	require.NotErrorIs(t, err, errKeyspaceNew)
}
