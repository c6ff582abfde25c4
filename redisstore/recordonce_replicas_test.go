package redisstore

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestReplayStoreRecordOnceWithReplicasNeverWithdrawsARecord: with
// WithReplicas, a one-time record (a revocation, a code's spend, a
// sign-out) stands only once the replicas hold it, whoever wrote it: a
// call whose WAIT fails leaves its record in place (it only refuses; a
// concurrent call may have answered on it), and a call that finds a record
// already there succeeds only once the replicas acknowledge that record
// too, so "recorded already" is never answered for a record that may be
// lost. Recorded answers for the replicas' records alone the same way.
func TestReplayStoreRecordOnceWithReplicasNeverWithdrawsARecord(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // no replica attached: every WAIT 1 falls short
	c := srv.Client()
	s := NewReplayStore(c, "t:", WithReplicas(1, 50*time.Millisecond))
	settled(t, c, s.prefix)
	ctx := t.Context()
	issued := time.Now().Add(-time.Minute)
	until := time.Now().Add(10 * time.Minute)

	_, err := s.RecordOnce(ctx, "mine", "w", until, issued)
	require.ErrorIs(t, err, errNotReplicated)
	n := testkit.Must(c.Exists(ctx, s.prefix+"mine").Result())(t)
	require.EqualValues(t, 1, n, "a record written stays when too few replicas acknowledged it")

	// A twin's record, written and not yet acknowledged.
	require.NoError(t, c.Set(ctx, s.prefix+"twin", "1", time.Until(until)).Err())
	for _, attempt := range []string{"the call", "its retry"} {
		_, err = s.RecordOnce(ctx, "twin", "w", until, issued)
		require.ErrorIs(t, err, errNotReplicated, "%s: recorded already, by a record no replica holds", attempt)
	}

	// Recorded likewise answers "recorded" only for a record the replicas
	// hold (what was TestReplayStoreRecordedWithReplicasWaitsForARecordFound),
	// leaving it as it was; a record not found costs no wait.
	_, err = s.Recorded(ctx, "twin", issued)
	require.ErrorIs(t, err, errNotReplicated)
	found := testkit.Must(s.Recorded(ctx, "none", issued))(t)
	require.False(t, found)
	v := testkit.Must(c.Get(ctx, s.prefix+"twin").Result())(t)
	require.Equal(t, "1", v, "the reads leave the record as it was")
}

// TestReplicasRevocationAnswered200HoldsAtEveryReplica: with
// WithReplicas, a client revokes its token at replica a, whose store
// waits for a replica that is down, and, while a waits, again at replica
// b. Whatever each answers, the token is refused at every replica from
// then on: the record a wrote is never withdrawn, though a answers 503.
func TestReplicasRevocationAnswered200HoldsAtEveryReplica(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // no replica attached: every WAIT 1 falls short
	c := srv.Client()
	// a waits long enough for b's revocation to come while it waits.
	a, b, token := waitingReplicas(t, srv, MaxReplicaWait, shortWait)
	decide := func(base string) (int, string) { return decideAt(t, base, token) }
	revoke := func(base string) int {
		status, _ := revokeAt(t, base, token)
		return status
	}
	status, got := decide(b)
	require.Equal(t, http.StatusOK, status, got)

	var wg sync.WaitGroup
	var statusA int
	wg.Go(func() { statusA = revoke(a) })
	// a's record is in Redis and its WAIT pending: b revokes meanwhile.
	require.Eventually(t, func() bool {
		n, err := c.DBSize(t.Context()).Result()
		return err == nil && n >= 2 // the marker and a's record
	}, 10*time.Second, 5*time.Millisecond)
	statusB := revoke(b)
	wg.Wait()
	require.Equal(t, http.StatusServiceUnavailable, statusA, "too few replicas acknowledged a's record")
	// b answers 503: whether its own RecordOnce writes or it reads a's
	// record, no replica holds the record.
	require.Equal(t, http.StatusServiceUnavailable, statusB, "b's answer stands on a record no replica holds")
	for name, base := range map[string]string{"a": a, "b": b} {
		status, got := decide(base)
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusServiceUnavailable}, status,
			"replica %s serves a token whose revocation was asked: %s", name, got)
	}
}
