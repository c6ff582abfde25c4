package redisreplay

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// a-fix12c F2, the reference server's store: Finish pipelined the marker
// script after FinishScript and failed on the marker's error, after the
// record was already set to Finished (now the marker's answer only raises
// the generation seen). spendCode answers 503 with
// Retry-After; the retry finds the record not its own and is refused as a
// reuse (invalid_grant, the code's token revoked).
func TestAFinishThatErrsHasNotSpentTheRecord(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	if !srv.Real() {
		t.Skip("needs redis-server")
	}
	c := srv.Client()
	t.Cleanup(func() { _ = c.Close() })
	ctx := t.Context()
	s := settledStore(t, srv.URL())

	now := time.Now()
	mine, err := s.RecordOnce(ctx, "code", "w", now.Add(time.Hour), now.Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, mine)

	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1gb").Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	finished, ferr := s.Finish(ctx, "code", "w")
	t.Logf("Finish: finished=%v err=%v", finished, ferr)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
	if ferr == nil {
		return
	}
	v, err := c.Get(ctx, "p:code").Result()
	require.NoError(t, err)
	again, rerr := s.RecordOnce(ctx, "code", "w", now.Add(time.Hour), now.Add(-time.Minute))
	t.Logf("the record after the failed Finish: %q; the retry's RecordOnce: mine=%v err=%v", v, again, rerr)
	assert.True(t, rerr == nil && again,
		"Finish answered an error, but it had spent the record (%q): the retried redemption of a valid code is refused as a reuse", v)
}
