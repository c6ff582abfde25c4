package redisreplay

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/replaymarker"
)

// TestAFinishIsReportedWhateverTheMarkerSays: a-fix12c F2. Finish
// pipelined the marker's script after the one-time record's finish and
// failed on the marker's error (here: the server may evict), after the
// record was already finished: the reference server answered that code's
// redemption 503, and its retry found the record not its own and was
// refused as a reuse. The marker's answer now only raises the generation
// this store has seen.
func TestAFinishIsReportedWhateverTheMarkerSays(t *testing.T) {
	t.Parallel()
	redis := redisLikeAt(time.Now)
	var refuse atomic.Bool
	f := startFake(t, func(cmd []string) string {
		if refuse.Load() && cmd[0] == "EVAL" && cmd[1] == replaymarker.Script {
			return "-ERR " + replaymarker.MayEvict + "\r\n"
		}
		return redis(cmd)
	})
	s := settledStore(t, "redis://"+f.addr)
	now := time.Now()
	mine, err := s.RecordOnce(t.Context(), "code", "w", now.Add(time.Hour), now.Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, mine)

	refuse.Store(true)
	done, err := s.Finish(t.Context(), "code", "w")
	refuse.Store(false)
	require.NoError(t, err, "the record is finished: an error would refuse the redemption and its retry")
	require.True(t, done)
}
