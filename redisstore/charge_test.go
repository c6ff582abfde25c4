package redisstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestChargeScriptKeepsAKeysNewestRecords runs the charging script on a
// server whose clock the test sets (miniredis: TIME follows SetTime). An
// owner holds at most limit records: past it, its oldest is dropped (its
// record deleted) to make room, and a proof dated no later than the
// newest record it dropped is refused, writing nothing, since it cannot be
// told from that record's replay; a fresh proof always passes, however
// many the key sends (a-fix13d: a count that refused every proof of a busy
// key for up to a window locked out every caller of a service signing with
// it, and counted over the store's window, not the proof's). A replay of a
// held record stays a replay; another owner is not touched; records whose
// life is over leave the owner's set.
func TestChargeScriptKeepsAKeysNewestRecords(t *testing.T) {
	t.Parallel()
	srv := redistest.StartInProcess(t)
	m, c := srv.Miniredis(), srv.Client()
	ctx := t.Context()
	t0 := time.Now().Truncate(time.Second)
	m.SetTime(t0)
	const limit, life = 10, 130 * time.Second
	seq := 0
	charge := func(owner, key string, iat time.Time) int64 {
		a := replaymarker.ChargeArgs(iat, iat.Add(life), limit)
		set, mark := replaymarker.ChargeKeys("p:", owner)
		return testkit.Must(c.Eval(ctx, replaymarker.ChargeScript, []string{"p:" + key, set, mark}, a[0], a[1], a[2], a[3]).Int64())(t)
	}
	fresh := func(owner string, iat time.Time) int64 { seq++; return charge(owner, strconv.Itoa(seq), iat) }
	held := func(owner string) int64 {
		set, _ := replaymarker.ChargeKeys("p:", owner)
		return testkit.Must(c.ZCard(ctx, set).Result())(t)
	}

	for range limit {
		require.EqualValues(t, replaymarker.ChargeFirst, fresh("mallory", t0))
	}
	// The seconds after, the key goes on at its limit a second: its
	// oldest records make room.
	var t1 time.Time
	for s := 1; s <= 3; s++ {
		t1 = t0.Add(time.Duration(s) * time.Second)
		m.SetTime(t1)
		for range limit {
			require.EqualValues(t, replaymarker.ChargeFirst, fresh("mallory", t1), "a fresh proof of a busy key")
			require.LessOrEqual(t, held("mallory"), int64(limit))
		}
	}
	require.Zero(t, m.Exists("p:1"), "a dropped record is deleted")
	// One more in this second drops one of this second's records.
	require.EqualValues(t, replaymarker.ChargeFirst, fresh("mallory", t1))
	require.EqualValues(t, replaymarker.ChargeOverLimit, charge("mallory", "1", t0), "the replay of a dropped record")
	require.EqualValues(t, replaymarker.ChargeOverLimit, fresh("mallory", t1), "a proof dated no later than a dropped record")
	require.Zero(t, m.Exists("p:"+strconv.Itoa(seq)), "a refused record is not written")
	require.EqualValues(t, replaymarker.ChargeTaken, charge("mallory", strconv.Itoa(seq-1), t1), "a replay of a held record is a replay")
	require.EqualValues(t, replaymarker.ChargeFirst, fresh("mallory", t1.Add(time.Second)), "the key's next second")
	require.EqualValues(t, replaymarker.ChargeFirst, fresh("alice", t0), "another key, dated earlier")

	// A record a Verifier of a wider window wrote, dropped by a call of a
	// narrower one: the mark lasts as long as that record would have, so
	// its replay, still in the wider window, stays refused.
	wide := func(key string, iat time.Time, life time.Duration) int64 {
		a := replaymarker.ChargeArgs(iat, iat.Add(life), limit)
		set, mark := replaymarker.ChargeKeys("p:", "wide")
		return testkit.Must(c.Eval(ctx, replaymarker.ChargeScript, []string{"p:" + key, set, mark}, a[0], a[1], a[2], a[3]).Int64())(t)
	}
	for i := range limit {
		require.EqualValues(t, replaymarker.ChargeFirst, wide("w"+strconv.Itoa(i), t1, time.Hour))
	}
	require.EqualValues(t, replaymarker.ChargeFirst, wide("narrow", t1.Add(time.Second), life))
	_, mark := replaymarker.ChargeKeys("p:", "wide")
	require.Greater(t, m.TTL(mark), time.Hour-time.Minute, "the mark outlives the dropped record's window")
	// A narrow record dropped later raises the mark but never shortens it.
	for i := range limit {
		require.EqualValues(t, replaymarker.ChargeFirst, wide("n"+strconv.Itoa(i), t1.Add(2*time.Second), life))
	}
	require.Greater(t, m.TTL(mark), time.Hour-time.Minute, "a later, narrower drop kept the mark's end")
	require.EqualValues(t, replaymarker.ChargeOverLimit, wide("w0", t1, time.Hour), "the wide record's replay")

	// The records' life is over: they leave the set, and nothing is dropped.
	t2 := t1.Add(life + 2*time.Second)
	m.SetTime(t2)
	require.EqualValues(t, replaymarker.ChargeFirst, fresh("mallory", t2))
	require.EqualValues(t, 1, held("mallory"))
}
