package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestRecordedAnswersOnAFullRedis: a Redis full to its maxmemory
// (noeviction) refuses every write, the marker's high-water among them
// (a-rep13 F2: about a second after one caller filled Redis, every
// revocation check, a read, failed at every replica, Bearer tokens
// included). A read whose only write due is the high-water still answers:
// a record written before is found, another is not; the marker is left
// as it was (the write was refused); a write is still refused.
func TestRecordedAnswersOnAFullRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	require.True(t, srv.Real(), "a memory bound needs redis-server, on PATH here and in CI")
	c := srv.Client()
	ctx := t.Context()
	s := NewReplayStore(c, "")
	settled(t, c, s.prefix)
	since := time.Now().Add(-time.Minute)
	first := testkit.Must(s.Remember(ctx, "revoked", time.Now().Add(time.Hour)))(t)
	require.True(t, first)

	// The marker's high-water put 5 s back: the next read's script is
	// due to raise it (one write a second), whatever the test's pace.
	marker := testkit.Must(c.Get(ctx, s.since).Result())(t)
	parts := strings.Split(marker, "@")
	require.Len(t, parts, 4, "the marker %q", marker)
	hw := testkit.Must(strconv.ParseInt(parts[2], 10, 64))(t)
	parts[2] = strconv.FormatInt(hw-5000, 10)
	behind := strings.Join(parts, "@")
	require.NoError(t, c.Set(ctx, s.since, behind, 0).Err())

	// Fill Redis to its bound, as one flooding caller did.
	pad := strings.Repeat("x", 4096)
	filled := false
	for i := range 10_000 {
		if err := c.Set(ctx, fmt.Sprintf("pad:%d", i), pad, 0).Err(); err != nil {
			require.ErrorContains(t, err, "OOM")
			filled = true
			break
		}
	}
	require.True(t, filled, "Redis never refused a write")

	found, err := s.Recorded(ctx, "revoked", since)
	require.NoError(t, err, "a read on a full Redis whose high-water was due")
	require.True(t, found)
	found = testkit.Must(s.Recorded(ctx, "never", since))(t)
	require.False(t, found)
	now := testkit.Must(c.Get(ctx, s.since).Result())(t)
	require.Equal(t, behind, now, "the refused high-water write left the marker as it was")

	_, err = s.Remember(ctx, "a proof", time.Now().Add(time.Hour))
	require.Error(t, err, "a write on a full Redis")
	require.False(t, errors.Is(err, errOverLimit))
}
