package redisstore

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

const testURL = "https://api.example.test/orders"

// settled marks the keyspace of the stores with prefix as holding every
// proof for an hour, as a keyspace in use for that long does: a new one
// refuses proofs for the first 70 s
// (TestReplayStoreRefusesWhileTheKeyspaceIsNew).
func settled(t *testing.T, c redis.UniversalClient, prefix string) {
	t.Helper()
	require.NoError(t, c.Set(t.Context(), prefix+SinceKey, time.Now().Add(-time.Hour).UnixMilli(), 0).Err())
}

func TestReplayStoreRemember(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	s := NewReplayStore(c, "t:")
	settled(t, c, s.prefix)
	ctx := t.Context()
	until := time.Now().Add(time.Hour)

	first := testkit.Must(s.Remember(ctx, "a", until))(t)
	require.True(t, first, "a new key is first")
	first = testkit.Must(s.Remember(ctx, "a", until))(t)
	require.False(t, first, "a recorded key is not first")
	first = testkit.Must(s.Remember(ctx, "b", until))(t)
	require.True(t, first, "another key is first")

	// A key whose until has passed is gone: the next Remember is first.
	past := time.Now().Add(-time.Second)
	for range 2 {
		first = testkit.Must(s.Remember(ctx, "expired", past))(t)
		require.True(t, first)
	}
}

// TestReplayStoreOneFirstUnderRace: goroutines on several clients (as on
// several replicas) race one key; exactly one is first.
func TestReplayStoreOneFirstUnderRace(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	stores := make([]*ReplayStore, 3)
	for i := range stores {
		stores[i] = NewReplayStore(srv.Client(), "")
	}
	settled(t, srv.Client(), stores[0].prefix)
	until := time.Now().Add(time.Minute)
	for round := range 20 {
		key := "k" + strconv.Itoa(round)
		var firsts atomic.Int32
		var wg sync.WaitGroup
		for i := range 24 {
			wg.Go(func() {
				first, err := stores[i%len(stores)].Remember(t.Context(), key, until)
				if err != nil {
					t.Error(err)
				}
				if first {
					firsts.Add(1)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, firsts.Load(), "round %d", round)
	}
}

// replica is one service replica: a Verifier on the shared store.
func replica(t *testing.T, s dpop.ReplayStore, now func() time.Time) *dpop.Verifier {
	t.Helper()
	return testkit.Must(dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithClock(now)))(t)
}

func proofAt(t *testing.T, signer *dpop.Signer, at time.Time) dpop.Request {
	t.Helper()
	p := testkit.Must(signer.WithClock(func() time.Time { return at }).Proof("GET", testURL, "", ""))(t)
	return dpop.Request{Proofs: []string{p}, Method: "GET", URL: testURL}
}

// TestReplayAcrossReplicasOnRedis: a proof accepted by one replica is a
// replay at every other; Redis stopped refuses every proof with
// ErrReplayStoreUnavailable; Redis restarted empty refuses the proofs it
// may have forgotten, and accepts fresh ones once the iat window and the
// margin have passed since it came back, without restarting a replica.
func TestReplayAcrossReplicasOnRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	s := NewReplayStore(c, "")
	settled(t, c, s.prefix)
	clock := testkit.NewClock(time.Now())
	a, b := replica(t, s, clock.Now), replica(t, s, clock.Now)
	signer := testkit.Must(dpop.GenerateKey())(t)

	req := proofAt(t, signer, clock.Now())
	_, err := a.Verify(t.Context(), req)
	require.NoError(t, err)
	for name, v := range map[string]*dpop.Verifier{"other": b, "same": a} {
		_, err = v.Verify(t.Context(), req)
		require.ErrorIs(t, err, dpop.ErrReplay, "replay at the %s replica", name)
	}

	srv.Stop()
	// The call's own deadline, short: the client retries a refused
	// connection for longer than the Verifier's bound.
	down, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = b.Verify(down, proofAt(t, signer, clock.Now()))
	require.ErrorIs(t, err, dpop.ErrReplayStoreUnavailable, "Redis down")
	require.NotErrorIs(t, err, dpop.ErrReplay)

	srv.Restart()
	_, err = b.Verify(t.Context(), req)
	require.ErrorIs(t, err, dpop.ErrReplayStoreUnavailable, "the replay of a proof Redis forgot")
	_, err = a.Verify(t.Context(), proofAt(t, signer, clock.Now()))
	require.ErrorIs(t, err, dpop.ErrReplayStoreUnavailable, "a proof that could have been accepted before the restart")

	// The marker is Redis's time of the first proof after the restart,
	// which the replicas' clocks agree with.
	clock.Set(time.Now().Add(dpop.DefaultMaxSkew + dpop.ReplayStoreMargin + time.Second))
	fresh := proofAt(t, signer, clock.Now())
	testkit.Must(a.Verify(t.Context(), fresh))(t, "a fresh proof once the window has passed since the restart")
	_, err = b.Verify(t.Context(), fresh)
	require.ErrorIs(t, err, dpop.ErrReplay)
}

// TestReplayStoreRefusesWhileTheKeyspaceIsNew: on an empty keyspace the
// store cannot know which proofs were accepted before it (a Redis that
// lost its keys looks like a new one): it refuses the proof that finds it
// empty, marks the keyspace's beginning with Redis's clock, and refuses
// each proof that could have been accepted before the marker, a proof
// dated ahead included.
func TestReplayStoreRefusesWhileTheKeyspaceIsNew(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	s := NewReplayStore(c, "")
	before := testkit.Must(c.Time(t.Context()).Result())(t)
	_, err := s.Remember(t.Context(), "first", time.Now().Add(time.Hour))
	require.ErrorIs(t, err, errKeyspaceNew, "the proof that finds the keyspace empty")
	after := testkit.Must(c.Time(t.Context()).Result())(t)
	began := time.UnixMilli(markerOf(t, c, s.since))
	require.False(t, began.Before(before.Truncate(time.Millisecond)), "the marker is Redis's time")
	require.False(t, began.After(after.Add(time.Millisecond)), "the marker is Redis's time")

	// The window is the Verifiers' (WithIATWindow): a proof is refused
	// while it could have been accepted before the marker, by a Verifier
	// with that window.
	for _, w := range []struct {
		name            string
		store           *ReplayStore
		maxAge, maxSkew time.Duration
	}{
		{"default window", s, dpop.DefaultMaxAge, dpop.DefaultMaxSkew},
		{"a wider window", NewReplayStore(c, "", WithIATWindow(5*time.Minute, time.Minute)), 5 * time.Minute, time.Minute},
		{"a narrower window", NewReplayStore(c, "", WithIATWindow(5*time.Second, 0)), 5 * time.Second, 0},
	} {
		edge := began.Add(w.maxSkew + dpop.ReplayStoreMargin)
		for _, tc := range []struct {
			name string
			iat  time.Time
			ok   bool
		}{
			{"iat at the marker", began, false},
			{"iat just inside", edge.Add(-time.Millisecond), false},
			{"iat at the edge", edge, true},
		} {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				first, err := w.store.Remember(t.Context(), w.name+"/"+tc.name, tc.iat.Add(w.maxAge+dpop.ReplayStoreMargin))
				if !tc.ok {
					require.ErrorIs(t, err, errKeyspaceNew)
					return
				}
				require.NoError(t, err)
				require.True(t, first)
			})
		}
	}
}

// TestReplayStoreRewritesAMarkerThatCannotBeRight: a marker dated after
// Redis's clock (written by a replica whose clock ran a day ahead, as an
// older version did, or by hand) or that is not a time would refuse every
// proof until someone deleted it. The store rewrites it from Redis's
// clock: the proof that finds it is refused, and proofs are accepted
// again once the keyspace's 70 s have passed, by replicas with a correct
// clock, none restarted. A marker a little ahead (a failover to a server
// whose clock is behind, within the margin) is kept.
func TestReplayStoreRewritesAMarkerThatCannotBeRight(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	signer := testkit.Must(dpop.GenerateKey())(t)
	for _, tc := range []struct {
		name      string
		marker    func(redisNow time.Time) string
		rewritten bool
	}{
		{"a day ahead", func(n time.Time) string { return strconv.FormatInt(n.Add(24*time.Hour).UnixMilli(), 10) }, true},
		{"not a time", func(time.Time) string { return "yesterday" }, true},
		{"within the margin ahead", func(n time.Time) string {
			return strconv.FormatInt(n.Add(dpop.ReplayStoreMargin/2).UnixMilli(), 10)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewReplayStore(c, "t:"+tc.name+":")
			redisNow := testkit.Must(c.Time(t.Context()).Result())(t)
			mk := tc.marker(redisNow)
			require.NoError(t, c.Set(t.Context(), s.since, mk, 0).Err())

			_, err := replica(t, s, time.Now).Verify(t.Context(), proofAt(t, signer, time.Now()))
			require.ErrorIs(t, err, dpop.ErrReplayStoreUnavailable, "the proof that finds the marker")
			ms := markerOf(t, c, s.since)
			if !tc.rewritten {
				require.Equal(t, mk, strconv.FormatInt(ms, 10), "kept")
				return
			}
			after := testkit.Must(c.Time(t.Context()).Result())(t)
			require.False(t, time.UnixMilli(ms).After(after.Add(time.Millisecond)), "rewritten from Redis's clock")

			later := time.Now().Add(10 * time.Minute)
			testkit.Must(replica(t, s, func() time.Time { return later }).Verify(t.Context(), proofAt(t, signer, later)))(t, "accepted once the keyspace's window has passed")
		})
	}
}

// TestReplayStoreHungRedis: a Redis that takes connections and never
// answers holds Verify only until the request's context ends.
func TestReplayStoreHungRedis(t *testing.T) {
	t.Parallel()
	addr, _ := redistest.Frozen(t)
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	v := replica(t, NewReplayStore(c, ""), time.Now)
	signer := testkit.Must(dpop.GenerateKey())(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := v.Verify(ctx, proofAt(t, signer, time.Now()))
	require.ErrorIs(t, err, dpop.ErrReplayStoreUnavailable)
}
