package redisstore

// Redis expires records by its own clock (PXAT is absolute). A Redis whose
// clock steps ahead (a bad NTP source, a resumed machine's clock
// corrected) expires at once every record whose until falls within the
// step (revocations, code spends, sign-outs, DPoP proofs) while its run_id
// stays the same: the keyspace must not vouch for those records, neither
// while Redis's clock is ahead nor after it steps back.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// steppableRedis is a miniredis whose clock a test steps (SetTime moves
// TIME, FastForward expires keys by the step, as a real server's expiry
// does), answering INFO server with a run_id as a real server does.
func steppableRedis(t *testing.T, now time.Time) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	srv := redistest.StartInProcess(t)
	srv.Miniredis().SetTime(now)
	return srv.Miniredis(), srv.Client()
}

// TestReplayKeyspaceNeverVouchesForRecordsRedissClockExpiredEarly: a
// token revoked a minute after it was issued, valid 30 more minutes by
// the service's clock; Redis's clock steps an hour ahead and expires the
// revocation. While Redis's clock is ahead, every call refuses (the
// revocation is never read "not recorded": that would be a false grant),
// saying the clocks differ; a step ahead within the margin refuses
// nothing. Once Redis's clock steps back below its high-water, the
// keyspace begins again (as after a flush): the token is refused, not
// served as unrevoked.
func TestReplayKeyspaceNeverVouchesForRecordsRedissClockExpiredEarly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Now()
	m, c := steppableRedis(t, now)
	s := NewReplayStore(c, "t:")
	settled(t, c, s.prefix) // the keyspace has been in use for an hour

	iat, exp := now.Add(-time.Minute), now.Add(30*time.Minute)
	first := testkit.Must(s.RecordOnce(ctx, "revoked", "w", exp.Add(dpop.ReplayStoreMargin), iat))(t)
	require.True(t, first)

	// Within the margin: nothing the service counts as live expired.
	m.SetTime(now.Add(dpop.ReplayStoreMargin / 2))
	rec, err := s.Recorded(ctx, "revoked", iat)
	require.NoError(t, err, "Redis's clock ahead by less than the margin")
	require.True(t, rec)

	// An hour ahead: the revocation expires in Redis.
	m.SetTime(now.Add(time.Hour))
	m.FastForward(time.Hour)
	require.False(t, m.Exists("t:revoked"), "control: Redis expired the revocation by its clock")
	rec, err = s.Recorded(ctx, "revoked", iat)
	require.ErrorIs(t, err, errClockAhead, "the revocation expired early: \"not recorded\" would serve a revoked token (answered %v)", rec)
	_, err = s.RecordOnce(ctx, "spent", "w", exp, iat)
	require.ErrorIs(t, err, errClockAhead)
	_, err = s.Remember(ctx, "proof", now.Add(2*time.Minute))
	require.ErrorIs(t, err, errClockAhead, "a DPoP proof whose record may have expired early")
	require.False(t, m.Exists("t:spent"), "nothing written for a call refused before its write")

	// Redis's clock steps back: it expired records the service counts
	// as live, so the keyspace begins again.
	m.SetTime(now)
	rec, err = s.Recorded(ctx, "revoked", iat)
	require.ErrorIs(t, err, errKeyspaceNew, "Redis's clock stepped back below its high-water (answered %v)", rec)
	v := testkit.Must(c.Get(ctx, s.since).Result())(t)
	began, _, _ := strings.Cut(v, "@")
	require.Equal(t, strconv.FormatInt(replaymarker.CeilMilli(now), 10), began, "the keyspace begins at Redis's TIME")
}

// TestReplayKeyspaceVouchesForNothingWhileTheCallersClockIsAhead: a
// process whose clock runs ahead of Redis's by more than the margin
// stamps what it issues (a token's iat, a proof window's start) after
// Redis's time, so after Redis lost its keys a credential issued, and
// revoked, before the loss reads as issued after the keyspace began, and
// would be vouched for: a revoked token served, a replayed proof
// accepted (a-fix8d). So every call of that process is refused, saying
// the clocks differ, writing nothing, until they agree again; no other
// process is refused for it.
func TestReplayKeyspaceVouchesForNothingWhileTheCallersClockIsAhead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Now()
	m, c := steppableRedis(t, now.Add(-dpop.ReplayStoreMargin-30*time.Second)) // Redis's clock behind this process's
	s := NewReplayStore(c, "t:")
	settled(t, c, s.prefix)
	iat := now.Add(-time.Minute)
	rec, err := s.Recorded(ctx, "revoked", iat)
	require.ErrorIs(t, err, errCallerAhead, "a credential stamped ahead of Redis's clock is vouched for (answered %v)", rec)
	_, err = s.RecordOnce(ctx, "spent", "w", now.Add(time.Hour), iat)
	require.ErrorIs(t, err, errCallerAhead)
	_, err = s.Remember(ctx, "proof", now.Add(2*time.Minute))
	require.ErrorIs(t, err, errCallerAhead)
	require.False(t, m.Exists("t:spent"), "nothing written for a call refused before its write")

	m.SetTime(time.Now().Add(-dpop.ReplayStoreMargin / 2)) // within the margin: the clocks agree
	rec = testkit.Must(s.Recorded(ctx, "revoked", iat))(t)
	require.False(t, rec)
}
