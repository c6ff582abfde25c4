package redisstore

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// A Redis with persistence (RDB snapshots, or AOF with appendfsync
// everysec) that crashes comes back from its last snapshot: the marker,
// written long before, is there, and the records written after the
// snapshot (revocations, code spends, sign-outs, DPoP proofs) are not.
// The marker is bound to the server's run (INFO server's run_id, new on
// every start), so the restored server begins the keyspace again, as a
// flushed one does: what it may have lost is refused, never answered
// "not recorded".

// snapshotServers runs f on a real redis-server and on the miniredis
// fallback (redistest gives it a run_id per start), so that both paths of
// redistest prove the rule.
func snapshotServers(t *testing.T, f func(t *testing.T, srv *redistest.Server)) {
	t.Run("redis-server", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		require.True(t, srv.Real(), "redis-server or valkey-server is on PATH here and in CI")
		f(t, srv)
	})
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		f(t, redistest.StartInProcess(t))
	})
}

// TestReplayStoreDoesNotTrustARedisRestoredFromASnapshot: a record taken
// after the snapshot (a one-time record, a proof) is lost by the restore;
// the store then answers neither "not recorded" nor "first" for anything
// it may have held, but errKeyspaceNew, whose callers refuse.
func TestReplayStoreDoesNotTrustARedisRestoredFromASnapshot(t *testing.T) {
	t.Parallel()
	snapshotServers(t, func(t *testing.T, srv *redistest.Server) {
		c := srv.Client()
		const prefix = "snap:"
		s := NewReplayStore(c, prefix)
		hourAgo := time.Now().Add(-time.Hour).UnixMilli()
		require.NoError(t, c.Set(t.Context(), prefix+SinceKey, hourAgo, 0).Err()) // an operator's word
		issued := time.Now().Add(-time.Minute)
		found := testkit.Must(s.Recorded(t.Context(), "revoked", issued))(t)
		require.False(t, found)
		srv.Save() // the periodic snapshot: the marker, an hour old
		first, err := s.RecordOnce(t.Context(), "revoked", "w", time.Now().Add(time.Hour), issued)
		require.NoError(t, err)
		require.True(t, first)
		found, err = s.Recorded(t.Context(), "revoked", issued)
		require.NoError(t, err)
		require.True(t, found)
		proofUntil := time.Now().Add(time.Minute)
		first, err = s.Remember(t.Context(), "proof", proofUntil)
		require.NoError(t, err)
		require.True(t, first)

		srv.RestartFromSnapshot() // the crash: the marker is back, the records are not
		found, err = s.Recorded(t.Context(), "revoked", issued)
		require.ErrorIs(t, err, errKeyspaceNew, "the revocation may be lost: the store must not answer found=%v", found)
		first, err = s.Remember(t.Context(), "proof", proofUntil)
		require.ErrorIs(t, err, errKeyspaceNew, "the proof's record may be lost: a replay must not be first (%v)", first)
		_, err = s.RecordOnce(t.Context(), "revoked", "w", time.Now().Add(time.Hour), issued)
		require.ErrorIs(t, err, errKeyspaceNew, "a spend of something issued before the restore cannot be vouched for")

		// Something issued a margin after the restore is served again:
		// the window opens once, as after a flush.
		later := time.Now().Add(2 * time.Minute)
		first = testkit.Must(s.RecordOnce(t.Context(), "new", "w", later.Add(time.Hour), later))(t)
		require.True(t, first)
	})
}

// TestRevokedTokenStaysRefusedAfterRedisRestoresASnapshot: two reference
// servers share one Redis, in process (redisstore.ReplayStore) or as the
// binary (-redis: its own RESP client, mockserver/internal/redisreplay); a
// token revoked at one (200) is refused at the other, and stays refused
// after Redis crashes and comes back from a snapshot taken before the
// revocation.
func TestRevokedTokenStaysRefusedAfterRedisRestoresASnapshot(t *testing.T) {
	t.Parallel()
	const prefix = "t:"
	const seed = "0123456789abcdef0123456789abcdef"
	for _, replicas := range []struct {
		name  string
		start func(t *testing.T, srv *redistest.Server) string
	}{
		{"in process", func(t *testing.T, srv *redistest.Server) string {
			return replicaOn(t, NewReplayStore(srv.Client(), prefix), seed)
		}},
		{"binary", func(t *testing.T, srv *redistest.Server) string {
			return startMockserver(t, "-fixture", "../examples/fixtures/acme.json", "-key-seed", seed,
				"-redis", srv.URL(), "-redis-prefix", prefix)
		}},
	} {
		t.Run(replicas.name, func(t *testing.T) {
			t.Parallel()
			snapshotServers(t, func(t *testing.T, srv *redistest.Server) {
				c := srv.Client()
				require.NoError(t, c.Set(t.Context(), prefix+SinceKey, time.Now().Add(-time.Hour).UnixMilli(), 0).Err())
				a, b := replicas.start(t, srv), replicas.start(t, srv)

				token := aliceToken(t, a)
				status, body2 := decideAt(t, b, token)
				require.Equal(t, http.StatusOK, status, "served before its revocation: %s", body2)
				srv.Save() // the periodic snapshot: the marker (bound to this run by the calls), no revocation
				status, body := revokeAt(t, a, token)
				require.Equal(t, http.StatusOK, status, body)
				status, body2 = decideAt(t, b, token)
				require.Equal(t, http.StatusUnauthorized, status, "revoked, before the crash: %s", body2)

				srv.RestartFromSnapshot()
				for _, replica := range []string{a, b} {
					status, body2 = decideAt(t, replica, token)
					require.NotEqual(t, http.StatusOK, status, "the token revoked before Redis crashed is served again: %s", body2)
				}
			})
		})
	}
}

// TestReplayStoreBindsAMarkerWrittenByHandWithoutMovingIt: a bare time
// (an operator vouching for the keyspace as it is, or an older version's
// marker) is the keyspace's beginning on this run of the server: the
// first call binds it to the run_id (and the high-water of Redis's
// clock), keeping its time; a restart then
// replaces it like any marker of another run.
func TestReplayStoreBindsAMarkerWrittenByHandWithoutMovingIt(t *testing.T) {
	t.Parallel()
	snapshotServers(t, func(t *testing.T, srv *redistest.Server) {
		c := srv.Client()
		s := NewReplayStore(c, "bare:")
		hourAgo := time.Now().Add(-time.Hour).UnixMilli()
		require.NoError(t, c.Set(t.Context(), s.since, hourAgo, 0).Err())
		_, err := s.Recorded(t.Context(), "k", time.Now().Add(-time.Minute))
		require.NoError(t, err, "vouched for by the operator's marker")
		info := testkit.Must(c.Info(t.Context(), "server").Result())(t)
		_, rest, ok := strings.Cut(info, "run_id:")
		require.True(t, ok, "INFO server: %q", info)
		run, _, _ := strings.Cut(rest, "\r\n")
		got := testkit.Must(c.Get(t.Context(), s.since).Result())(t)
		bound, hw, ok := strings.Cut(strings.TrimPrefix(got, strconv.FormatInt(hourAgo, 10)+"@"), "@")
		require.True(t, ok, "marker %q", got)
		require.Equal(t, run, bound, "bound to this run, not moved: %q", got)
		hw, gen, ok := strings.Cut(hw, "@")
		require.True(t, ok, "and a generation: %q", got)
		_, err = strconv.ParseInt(hw, 10, 64)
		require.NoError(t, err, "with the high-water of Redis's clock: %q", got)
		g := testkit.Must(strconv.ParseInt(gen, 10, 64))(t, "and a generation: %q", got)
		require.Greater(t, g, hourAgo, "the generation bound at Redis's clock: %q", got)

		srv.Save()
		srv.RestartFromSnapshot()
		_, err = s.Recorded(t.Context(), "k", time.Now().Add(-time.Minute))
		require.ErrorIs(t, err, errKeyspaceNew, "a marker of another run")
	})
}

// markerOf reads the marker's time (Unix milliseconds): the text before
// the "@" of the server's run it is bound to.
func markerOf(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	v := testkit.Must(c.Get(t.Context(), key).Result())(t)
	ms, _, _ := strings.Cut(v, "@")
	return testkit.Must(strconv.ParseInt(ms, 10, 64))(t, "marker %q", v)
}

// TestReplayStoreDoesNotTrustAReplicaPromotedByAFailover: a replica holds
// the marker (replicated long ago) but may miss the newest records; once
// promoted it is another run of a server, so the store, without
// WithReplicas, begins the keyspace again there rather than answer "not
// recorded" for a record the old primary took.
func TestReplayStoreDoesNotTrustAReplicaPromotedByAFailover(t *testing.T) {
	t.Parallel()
	a, b := redistest.Start(t), redistest.Start(t)
	require.True(t, a.Real(), "replication needs redis-server or valkey-server, on PATH here and in CI")
	ctx := t.Context()
	var primary redistest.Name
	primary.Point(a.Addr())
	s := NewReplayStore(primary.Client(t, redis.Options{MaxRetries: -1}), "failover:")
	settled(t, a.Client(), s.prefix)
	issued := time.Now().Add(-time.Minute)
	testkit.Must(s.Recorded(ctx, "x", issued))(t) // binds the marker to A's run
	aMarker := testkit.Must(a.Client().Get(ctx, s.since).Result())(t)

	host, port, _ := net.SplitHostPort(a.Addr())
	require.NoError(t, b.Client().Do(ctx, "REPLICAOF", host, port).Err())
	require.Eventually(t, func() bool {
		v, err := b.Client().Get(ctx, s.since).Result()
		return err == nil && v == aMarker
	}, 15*time.Second, 20*time.Millisecond, "B holds A's marker")
	require.NoError(t, b.Client().Do(ctx, "REPLICAOF", "NO", "ONE").Err()) // the link breaks: B lags from here

	first, err := s.RecordOnce(ctx, "revoked", "w", time.Now().Add(time.Hour), issued) // on A only
	require.NoError(t, err)
	require.True(t, first)

	a.Stop() // A dies; B, promoted, is the primary the service reaches
	primary.Point(b.Addr())
	// A connection the pool held to A may still be handed out once (its
	// FIN not yet seen): that call fails on the dead connection (EOF,
	// closed), and the next one dials B. Neither may answer found=false.
	var found bool
	for range 3 {
		found, err = s.Recorded(ctx, "revoked", issued)
		if err == nil || errors.Is(err, errKeyspaceNew) || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)) {
			break
		}
	}
	require.ErrorIs(t, err, errKeyspaceNew, "B never held the record: it must not answer found=%v", found)
}
