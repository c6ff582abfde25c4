package redisreplay

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/onetime"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestRecordedReadsWhatRememberWrote: what one replica records (a
// revocation, a spent code) is what every replica reads, in one round
// trip of GET and the marker's script, writing nothing but the marker.
func TestRecordedReadsWhatRememberWrote(t *testing.T) {
	t.Parallel()
	f := startFake(t, redisLike())
	s := settledStore(t, "redis://"+f.addr)
	since := time.Now().Add(-time.Minute)
	found := testkit.Must(s.Recorded(t.Context(), "k", since))(t)
	require.False(t, found, "not recorded yet")
	first := testkit.Must(s.Remember(t.Context(), "k", time.Now().Add(time.Hour)))(t)
	require.True(t, first)
	before := len(f.commands())
	found = testkit.Must(s.Recorded(t.Context(), "k", since))(t)
	require.True(t, found)
	cmds := f.commands()[before:]
	require.Len(t, cmds, 2, "one round trip")
	require.Equal(t, []string{"GET", "p:k"}, cmds[0])
	require.Equal(t, []string{"EVAL", replaymarker.Script, "1", "p:since"}, cmds[1][:4], "the marker decided by the server")
}

// TestRecordedRefusesWhatTheKeyspaceCannotVouchFor: a keyspace younger
// than the record asked about (Redis lost its keys after the token was
// issued), or with no marker at all, cannot say that nothing was recorded:
// the read fails (the server refuses the credential), and the marker is
// decided on the server as for Remember. A record made after the marker
// (less the margin) is vouched for. A server error fails the read.
func TestRecordedRefusesWhatTheKeyspaceCannotVouchFor(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Millisecond)
	answer := redisLikeAt(func() time.Time { return now })
	f := startFake(t, answer)
	s := openStore(t, "redis://"+f.addr, "p:")

	_, err := s.Recorded(t.Context(), "k", now.Add(time.Hour))
	require.ErrorIs(t, err, errKeyspaceNew, "no marker: the keyspace begins now")
	require.Equal(t, strconv.FormatInt(now.UnixMilli(), 10), markerAt(t, answer, "p:since"), "decided by the server")

	_, err = s.Recorded(t.Context(), "k", now.Add(-time.Minute))
	require.ErrorIs(t, err, errKeyspaceNew, "issued before the keyspace began")
	require.ErrorIs(t, err, dpop.ErrKeyspaceNew, "the server refuses the credential for good, not as an outage")
	_, err = s.Recorded(t.Context(), "k", now.Add(dpop.ReplayStoreMargin-time.Millisecond))
	require.ErrorIs(t, err, errKeyspaceNew, "issued within the margin of the keyspace's beginning (clocks differ)")
	found := testkit.Must(s.Recorded(t.Context(), "k", now.Add(dpop.ReplayStoreMargin)))(t, "issued a margin after the keyspace began")
	require.False(t, found)

	down := startFake(t, func([]string) string { return "-ERR LOADING\r\n" })
	s2 := openStore(t, "redis://"+down.addr, "p:")
	_, err = s2.Recorded(t.Context(), "k", now)
	require.Error(t, err)
	require.False(t, errors.Is(err, errKeyspaceNew))
}

// TestRecordOnceDecidesTheKeyspaceBeforeWriting: a one-time record (a
// code's spend, a revocation, a sign-out) of something issued at since is
// written only once the keyspace is found to vouch for since (began a
// margin before it, as Recorded asks): otherwise the call fails having
// sent no write, so its retry is not refused as "already recorded". Once
// the keyspace vouches, the first call records (true) and another
// writer's finds it (false). No DPoP proof window applies: a record whose until is soon
// after the keyspace's beginning is taken.
func TestRecordOnceDecidesTheKeyspaceBeforeWriting(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Millisecond)
	answer := redisLikeAt(func() time.Time { return now })
	f := startFake(t, answer)
	s := openStore(t, "redis://"+f.addr, "p:")
	began := now.Add(-30 * time.Second) // Redis restarted 30 s ago
	answer([]string{"SET", "p:since", strconv.FormatInt(began.UnixMilli(), 10)})

	issued := now.Add(-time.Second) // within the margin after the keyspace began
	for _, attempt := range []string{"the call", "its retry"} {
		_, err := s.RecordOnce(t.Context(), "k", "w", issued.Add(2*time.Minute), issued)
		require.ErrorIs(t, err, errKeyspaceNew, attempt)
		for _, c := range f.commands() {
			require.NotEqual(t, "SET", c[0], "%s wrote %v", attempt, c)
			require.False(t, c[0] == "EVAL" && c[1] == onetime.Script, "%s wrote %v", attempt, c)
		}
	}
	// The operator knows the keyspace is older: the retry records.
	answer([]string{"SET", "p:since", strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10)})
	first := testkit.Must(s.RecordOnce(t.Context(), "k", "w", issued.Add(2*time.Minute), issued))(t)
	require.True(t, first)
	first = testkit.Must(s.RecordOnce(t.Context(), "k", "other", issued.Add(2*time.Minute), issued))(t)
	require.False(t, first, "recorded already, by another writer")
	found := testkit.Must(s.Recorded(t.Context(), "k", issued))(t)
	require.True(t, found)
}

// TestRecordOnceTakesEveryTextOfTheMarkersTime: a marker written by hand
// as "+N", "0N" or "-0" is the time N (or 0) for every read of it,
// RecordOnce's second read included: a keyspace that vouches for reads
// vouches for one-time records too, call after call.
func TestRecordOnceTakesEveryTextOfTheMarkersTime(t *testing.T) {
	t.Parallel()
	hourAgo := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	for _, text := range []string{"+" + hourAgo, "0" + hourAgo, "-0"} {
		t.Run(text, func(t *testing.T) {
			t.Parallel()
			f := startFake(t, redisLike())
			s := openStore(t, "redis://"+f.addr, "p:")
			require.NoError(t, setMarker(t, s, text))
			issued := time.Now().Add(-time.Minute)
			testkit.Must(s.Recorded(t.Context(), "k", issued))(t, "the keyspace vouches for reads")
			first := testkit.Must(s.RecordOnce(t.Context(), "k", "w", time.Now().Add(time.Hour), issued))(t)
			require.True(t, first)
			first = testkit.Must(s.RecordOnce(t.Context(), "k", "other", time.Now().Add(time.Hour), issued))(t)
			require.False(t, first, "recorded already, by another writer")
		})
	}
}

// TestARestartedServerVouchesForNothingBeforeIt: a Redis that crashed and
// came back from its snapshot (or an AOF not yet synced) may have lost the
// records written after it, while the marker, older, survived. The
// marker is bound to the server's run (run_id), so the restarted server
// begins the keyspace again: a record asked about from before the restart
// fails the read (the reference server refuses the credential) instead of
// answering "not recorded", a one-time record of it is refused, and a
// proof is refused for the window, as after a flush.
func TestARestartedServerVouchesForNothingBeforeIt(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Millisecond)
	answer := redisLikeAt(func() time.Time { return now })
	f := startFake(t, answer)
	s := settledStore(t, "redis://"+f.addr)
	issued := now.Add(-time.Minute)
	first := testkit.Must(s.RecordOnce(t.Context(), "revoked", "w", now.Add(time.Hour), issued))(t)
	require.True(t, first)
	found := testkit.Must(s.Recorded(t.Context(), "k", issued))(t)
	require.False(t, found)

	answer([]string{restartCommand}) // every key kept: the most a restore can keep
	_, err := s.Recorded(t.Context(), "k", issued)
	require.ErrorIs(t, err, errKeyspaceNew, "a record made after the snapshot may be lost: no answer")
	_, err = s.RecordOnce(t.Context(), "other", "w", now.Add(time.Hour), issued)
	require.ErrorIs(t, err, errKeyspaceNew)
	_, err = s.Remember(t.Context(), "proof", now.Add(2*time.Minute))
	require.ErrorIs(t, err, errKeyspaceNew, "a proof the lost records may have held")
	require.Equal(t, strconv.FormatInt(now.UnixMilli(), 10), markerAt(t, answer, "p:since"), "the keyspace begins at the restart")
}

// TestRecordOnceKeepsARecordForItsWritersRetry: a one-time record whose
// write reached Redis but whose answer came after the call's deadline (the
// call failed: the server answered 503) is its writer's: the writer's
// retry finds it its own (true), anyone else's call does not (false).
// Once finished (its request answered), no call finds it its own, its
// writer's included; finishing again is no error.
func TestRecordOnceKeepsARecordForItsWritersRetry(t *testing.T) {
	t.Parallel()
	inner := redisLike()
	var hold atomic.Bool
	release := make(chan struct{})
	f := startFake(t, func(cmd []string) string {
		r := inner(cmd)
		if cmd[0] == "EVAL" && cmd[1] == onetime.Script && hold.Load() {
			<-release // the write is done; its answer is late
		}
		return r
	})
	t.Cleanup(func() { close(release) })
	s := settledStore(t, "redis://"+f.addr)
	issued := time.Now().Add(-time.Minute)
	until := time.Now().Add(time.Hour)

	hold.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := s.RecordOnce(ctx, "k", "writer", until, issued)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the answer is late")
	hold.Store(false)

	for _, tc := range []struct {
		writer string
		mine   bool
	}{
		{"writer", true},
		{"another", false},
		{"writer", true},
	} {
		mine := testkit.Must(s.RecordOnce(t.Context(), "k", tc.writer, until, issued))(t)
		require.Equal(t, tc.mine, mine, "RecordOnce of %s", tc.writer)
	}
	for _, tc := range []struct {
		writer   string
		finished bool
	}{
		{"another", false}, // another writer's record
		{"writer", true},   // the one call that finishes it
		{"writer", false},  // finished already: no second answer
	} {
		finished := testkit.Must(s.Finish(t.Context(), "k", tc.writer))(t)
		require.Equal(t, tc.finished, finished, "Finish of %s", tc.writer)
	}
	for _, w := range []string{"writer", "another"} {
		mine := testkit.Must(s.RecordOnce(t.Context(), "k", w, until, issued))(t)
		require.False(t, mine, "RecordOnce of %s once the record is finished", w)
	}
	for _, w := range []string{"", onetime.Finished, strings.Repeat("w", onetime.MaxWriter+1)} {
		_, err := s.RecordOnce(t.Context(), "k2", w, until, issued)
		require.ErrorContains(t, err, "give a writer of 1 to 64 bytes")
	}
}

// TestRecordOnceReadsTheMarkerOnlyThroughItsScript: RecordOnce judges the
// keyspace by the marker's script (bound to the server's run_id), before
// the write and again with it, in the write's round trip: EVAL of the
// marker's script; then EVAL of the one-time record's script (the writer
// as the record's value, until rounded up to the millisecond, no rewrite)
// and EVAL of the marker's script. No GET of the marker, no TIME: a
// restart between the two round trips (a new run, every key kept, the
// most a restore can keep) fails the call, the record being in a keyspace
// that cannot vouch for since.
func TestRecordOnceReadsTheMarkerOnlyThroughItsScript(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Millisecond)
	answer := redisLikeAt(func() time.Time { return now })
	var restart atomic.Bool
	f := startFake(t, func(cmd []string) string {
		if cmd[0] == "EVAL" && cmd[1] == onetime.Script && restart.Load() {
			answer([]string{restartCommand}) // after the first round trip, before the write
		}
		return answer(cmd)
	})
	s := settledStore(t, "redis://"+f.addr)
	issued := now.Add(-time.Minute)
	until := time.UnixMilli(4_000_000_000_000).Add(time.Microsecond)
	margin := strconv.FormatInt(dpop.ReplayStoreMargin.Milliseconds(), 10)
	// the marker's script after a read and after a write (the fake
	// answers no generation: the process has seen 0)
	marker := []string{"EVAL", replaymarker.Script, "1", "p:since", margin, clockRead, "0", "0"}
	markerWrote := []string{"EVAL", replaymarker.Script, "1", "p:since", margin, clockRead, "0", "1"}

	before, from := len(f.commands()), time.Now().UnixMilli()
	first := testkit.Must(s.RecordOnce(t.Context(), "k", "w", until, issued))(t)
	require.True(t, first)
	require.Equal(t, [][]string{
		marker,
		{"EVAL", onetime.Script, "1", "p:k", "w", "4000000000001", "0"},
		markerWrote,
	}, withClockRead(f.commands()[before:], from), "the marker decided by its script, before the write and with it, with the process's clock reading")

	restart.Store(true)
	_, err := s.RecordOnce(t.Context(), "k2", "w", until, issued)
	require.ErrorIs(t, err, errKeyspaceNew, "the server restarted between the marker's first decision and the write")
}
