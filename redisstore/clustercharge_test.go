package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestOneKeyIsChargedOnACluster: on a Redis Cluster (one node holding
// every slot: the record and its key's counters lie in different slots
// all the same, which one script may not touch) the store charges each
// proof to its key too: one key holds the Verifier's limit of records, the
// oldest dropped (and deleted, in its own slot) to make room; a proof of a
// second whose record it dropped, and the dropped proof's replay, are
// refused with dpop.ErrReplayCacheFull, no store outage; a held proof's
// replay is refused; the key's next second and another key pass.
func TestOneKeyIsChargedOnACluster(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	require.True(t, srv.Real(), "a Cluster needs redis-server, on PATH here and in CI")
	ctx := t.Context()
	node := srv.Client()
	require.NoError(t, node.Do(ctx, "cluster", "addslotsrange", 0, 16383).Err())
	require.Eventually(t, func() bool {
		info, _ := node.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok")
	}, 30*time.Second, 10*time.Millisecond, "the cluster is ok")
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	t.Cleanup(func() { _ = c.Close() })
	s := NewReplayStore(c, "")
	settled(t, c, s.prefix)
	const limit = 20
	v := testkit.Must(dpop.NewVerifier(dpop.WithReplayStore(s), dpop.WithReplayKeyLimit(limit)))(t)
	verify := func(p string) error {
		_, err := v.Verify(ctx, dpop.Request{Proofs: []string{p}, Method: "GET", URL: testURL})
		return err
	}
	key := testkit.Must(dpop.GenerateKey())(t)
	now := time.Now()
	mallory := key.WithClock(func() time.Time { return now }) // one second's proofs
	var proofs []string
	for range limit + 2 {
		p := testkit.Must(mallory.Proof("GET", testURL, "", ""))(t)
		proofs = append(proofs, p)
	}
	// The limit's proofs, then one that drops the oldest to make room.
	for _, p := range proofs[:limit+1] {
		require.NoError(t, verify(p))
	}
	err := verify(proofs[limit+1])
	require.ErrorIs(t, err, dpop.ErrReplayCacheFull, "a proof of the second whose record its key dropped")
	require.NotErrorIs(t, err, dpop.ErrReplayStoreUnavailable)
	// Every earlier proof's replay is refused: as a replay while its record
	// is held, as over the limit once it was dropped (the proofs share one
	// second, so which one the key dropped is the set's choice).
	for _, p := range proofs[:limit+1] {
		err := verify(p)
		require.True(t, errors.Is(err, dpop.ErrReplay) || errors.Is(err, dpop.ErrReplayCacheFull), "the replay of an earlier proof: %v", err)
	}
	later := key.WithClock(func() time.Time { return now.Add(time.Second) })
	p := testkit.Must(later.Proof("GET", testURL, "", ""))(t)
	require.NoError(t, verify(p), "the key's proof of the next second")
	alice := testkit.Must(dpop.GenerateKey())(t)
	p = testkit.Must(alice.Proof("GET", testURL, "", ""))(t)
	require.NoError(t, verify(p), "another key's proof")
	require.ErrorIs(t, verify(p), dpop.ErrReplay)

	// A record a Verifier of a wider window wrote, dropped by a charge of
	// a narrower one: the mark, on another slot than the record, lasts as
	// long as that record would have (a-fix13f: it lasted the narrower
	// window, and the record's replay passed at the wider Verifier after).
	iat := time.Now().Truncate(time.Second)
	first := testkit.Must(s.RememberCharged(ctx, "wide", "owner", 2, iat, iat.Add(10*time.Minute)))(t)
	require.True(t, first)
	for i := range 2 {
		first := testkit.Must(s.RememberCharged(ctx, "narrow"+strconv.Itoa(i), "owner", 2, iat.Add(time.Second), iat.Add(3*time.Second)))(t)
		require.True(t, first)
	}
	_, mark := replaymarker.ChargeKeys(s.prefix, "owner")
	require.Greater(t, c.PTTL(ctx, mark).Val(), 9*time.Minute, "the mark outlives the dropped record")
	first, err = s.RememberCharged(ctx, "wide", "owner", 2, iat, iat.Add(10*time.Minute))
	require.False(t, first && err == nil, "the dropped record's replay")

	// The same drop with the mark's extension failing (a reset connection,
	// the store's timeout: a-rep14 F1): the dropped record is deleted only
	// after its mark lasts as long as it would have, so it is still there,
	// and its replay is refused for as long as it would have been (it was
	// deleted first, and the mark lasted the narrower window).
	failing := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	failing.AddHook(failExtendMark{})
	t.Cleanup(func() { _ = failing.Close() })
	sf := NewReplayStore(failing, "")
	first, err = s.RememberCharged(ctx, "wide2", "owner2", 1, iat, iat.Add(10*time.Minute))
	require.NoError(t, err)
	require.True(t, first)
	_, err = sf.RememberCharged(ctx, "narrow2", "owner2", 1, iat.Add(time.Second), iat.Add(3*time.Second))
	require.ErrorIs(t, err, errExtendMark, "the charge fails closed")
	require.Greater(t, c.PTTL(ctx, s.prefix+"wide2").Val(), 9*time.Minute, "the dropped record stays until its mark would outlive it")
	first, err = s.RememberCharged(ctx, "wide2", "owner2", 1, iat, iat.Add(10*time.Minute))
	require.False(t, first && err == nil, "the dropped record's replay")

	// The replay of a key's oldest held proof, the key at its limit: the
	// charge popped the replay's own record and the SET wrote it again, so
	// it passed (a-rep14b F1); the record is written first now, and a
	// replay stops there, changing nothing.
	v2, err := dpop.NewVerifier(dpop.WithReplayStore(NewReplayStore(c, "")), dpop.WithReplayKeyLimit(2))
	require.NoError(t, err)
	held := testkit.Must(dpop.GenerateKey())(t)
	a := testkit.Must(held.WithClock(func() time.Time { return now.Add(-time.Second) }).Proof("GET", testURL, "", ""))(t)
	b := testkit.Must(held.WithClock(func() time.Time { return now }).Proof("GET", testURL, "", ""))(t)
	for _, p := range []string{a, b} {
		_, err = v2.Verify(ctx, dpop.Request{Proofs: []string{p}, Method: "GET", URL: testURL})
		require.NoError(t, err)
	}
	_, err = v2.Verify(ctx, dpop.Request{Proofs: []string{a}, Method: "GET", URL: testURL})
	require.ErrorIs(t, err, dpop.ErrReplay, "the replay of the key's oldest held proof")

	// The charge's mark lapsing before the extension runs (a stall of the
	// charging process: a-rep14b F2): the extension writes it again, and
	// the record goes only after.
	lapsing := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	lapsing.AddHook(lapseMark{c})
	t.Cleanup(func() { _ = lapsing.Close() })
	sl := NewReplayStore(lapsing, "")
	first, err = s.RememberCharged(ctx, "wide3", "owner3", 1, iat, iat.Add(10*time.Minute))
	require.NoError(t, err)
	require.True(t, first)
	first, err = sl.RememberCharged(ctx, "narrow3", "owner3", 1, iat.Add(time.Second), iat.Add(3*time.Second))
	require.NoError(t, err)
	require.True(t, first)
	_, mark3 := replaymarker.ChargeKeys(s.prefix, "owner3")
	require.Greater(t, c.PTTL(ctx, mark3).Val(), 9*time.Minute, "the mark, written again, outlives the dropped record")
	first, err = s.RememberCharged(ctx, "wide3", "owner3", 1, iat, iat.Add(10*time.Minute))
	require.False(t, first && err == nil, "the dropped record's replay")
}

// lapseMark deletes the owner's mark (through c) just before each
// ExtendMarkScript round trip: the charge's short mark expired meanwhile.
type lapseMark struct{ c redis.UniversalClient }

func (lapseMark) DialHook(next redis.DialHook) redis.DialHook { return next }
func (lapseMark) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h lapseMark) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 3 && a[1] == replaymarker.ExtendMarkScript {
			if mark, ok := a[3].(string); ok {
				h.c.Del(ctx, mark)
			}
		}
		return next(ctx, cmd)
	}
}

// errExtendMark is failExtendMark's error.
var errExtendMark = errors.New("injected: the mark's extension failed")

// failExtendMark fails every ExtendMarkScript round trip.
type failExtendMark struct{}

func (failExtendMark) DialHook(next redis.DialHook) redis.DialHook { return next }
func (failExtendMark) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (failExtendMark) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && a[1] == replaymarker.ExtendMarkScript {
			cmd.SetErr(errExtendMark)
			return errExtendMark
		}
		return next(ctx, cmd)
	}
}
