package redisstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestChargeScriptCountsOneWindow runs the charging script on a server
// whose clock the test sets (miniredis: TIME follows SetTime): an owner
// with limit records is refused, writing nothing, while another owner is
// not, and a replay stays a replay; its records count until one proofs'
// window (maxAge + maxSkew, 70 s) has passed since they were taken, no
// longer; its counter expires then.
func TestChargeScriptCountsOneWindow(t *testing.T) {
	t.Parallel()
	srv := redistest.StartInProcess(t)
	m, c := srv.Miniredis(), srv.Client()
	ctx := t.Context()
	window := dpop.DefaultMaxAge + dpop.DefaultMaxSkew
	width := window.Milliseconds() / replaymarker.ChargeBuckets
	// t0: a second into a time bucket.
	b0 := time.Now().UnixMilli()/width + 1
	t0 := time.UnixMilli(b0*width + 1000)
	m.SetTime(t0)
	const limit = 10
	seq := 0
	charge := func(owner, key string) int64 {
		a := replaymarker.ChargeArgs(time.Now().Add(time.Hour), limit, window)
		n, err := c.Eval(ctx, replaymarker.ChargeScript, []string{"p:" + key, replaymarker.ChargeKey("p:", owner)}, a[0], a[1], a[2]).Int64()
		require.NoError(t, err)
		return n
	}
	fresh := func(owner string) int64 { seq++; return charge(owner, strconv.Itoa(seq)) }
	for range limit {
		require.EqualValues(t, replaymarker.ChargeFirst, fresh("mallory"))
	}
	require.EqualValues(t, replaymarker.ChargeOverLimit, fresh("mallory"))
	require.Zero(t, m.Exists("p:"+strconv.Itoa(seq)), "a refused record is not written")
	require.EqualValues(t, replaymarker.ChargeTaken, charge("mallory", "1"), "a replay past the limit is a replay")
	require.EqualValues(t, replaymarker.ChargeFirst, fresh("alice"))
	counter := replaymarker.ChargeKey("p:", "mallory") + strconv.FormatInt(b0, 10)
	require.Equal(t, window-time.Second, m.TTL(counter), "the counter lives until no call sums it")

	// Still within one window of the records: refused.
	m.SetTime(t0.Add(window - time.Second - time.Millisecond))
	require.EqualValues(t, replaymarker.ChargeOverLimit, fresh("mallory"))
	// The records are a window old: the owner passes again, up to its limit.
	m.SetTime(t0.Add(window))
	for range limit {
		require.EqualValues(t, replaymarker.ChargeFirst, fresh("mallory"))
	}
	require.EqualValues(t, replaymarker.ChargeOverLimit, fresh("mallory"))
}
