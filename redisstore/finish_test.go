package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// a-fix12c F2: Finish pipelined the marker's script after the one-time
// record's FinishScript and failed on the marker's error (now the marker
// goes in a round trip of its own, whose answer only raises the
// generation seen). The two
// are separate scripts: the FinishScript has already set the record to
// Finished when the marker answers an error (MayEvict here; ClockAhead,
// CallerAhead, an INFO a proxy or ACL hides, likewise). The caller is told
// "failed" for a code that was spent. The reference server answers that
// redemption 503 temporarily_unavailable with Retry-After (spendCode's
// refusal); its retry (same writer: "a redemption whose record reached
// the store but failed after it is retried as its own") finds the record
// Finished, not its own, and is answered invalid_grant, revoking the
// code's token (codeReused): a valid code lost to a check of the marker
// that decided nothing about the record. An error from Finish must mean
// "not finished" (the retry passes), or Finish must not err once it has
// finished.
func TestAFinishThatErrsHasNotSpentTheRecord(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	ctx := t.Context()
	s := NewReplayStore(c, "t:")
	settled(t, c, s.prefix)

	now := time.Now()
	mine := testkit.Must(s.RecordOnce(ctx, "code", "w", now.Add(time.Hour), now.Add(-time.Minute)))(t)
	require.True(t, mine)

	// Between RecordOnce and Finish an operator applies an evicting
	// policy (a managed Redis's parameter group), and sets it back.
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1gb").Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	finished, ferr := s.Finish(ctx, "code", "w")
	t.Logf("Finish: finished=%v err=%v", finished, ferr)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())

	if ferr == nil {
		return // Finish answered what it did
	}
	v := testkit.Must(c.Get(ctx, "t:code").Result())(t)
	// The retry of the same redemption, once the store answers again.
	again, rerr := s.RecordOnce(ctx, "code", "w", now.Add(time.Hour), now.Add(-time.Minute))
	t.Logf("the record after the failed Finish: %q; the retry's RecordOnce: mine=%v err=%v", v, again, rerr)
	assert.True(t, rerr == nil && again,
		"Finish answered an error, but it had spent the record (%q): the retried redemption of a valid code is refused as a reuse", v)
}
