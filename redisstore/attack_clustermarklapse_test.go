package redisstore

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestAttackClusterMarkLapsesBeforeExtension: on a Cluster the charge
// (ChargeCountScript) sets the key's mark to last only the charging
// Verifier's window from the dropped record's iat, which for a record at
// the edge of that window is at most a second (often a few milliseconds)
// past the charge. dropRecords then reads the dropped record's expiry
// (PTTL, one round trip per record) and only then extends the mark with
// ExtendMarkScript, which does nothing when the mark is gone (pt == -2),
// and deletes the record all the same. So a stall of under a second
// between the charge and the extension (Redis busy with another client's
// slow command, a GC pause, a slow network: well within the Verifier's
// 2 s budget) leaves neither the record nor the mark: the replay of the
// record a wider Verifier wrote (10 minutes) is accepted.
//
// The stall is made by a hook that holds the ExtendMarkScript round trip
// until the mark has expired (it waits on the mark, not on a clock), and
// checks the wait stayed within dpop.ReplayStoreTimeout.
func TestAttackClusterMarkLapsesBeforeExtension(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	require.True(t, srv.Real(), "a Cluster needs redis-server")
	ctx := t.Context()
	node := srv.Client()
	require.NoError(t, node.Do(ctx, "cluster", "addslotsrange", 0, 16383).Err())
	require.Eventually(t, func() bool {
		info, _ := node.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok")
	}, 30*time.Second, 10*time.Millisecond, "the cluster is ok")
	plain := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	t.Cleanup(func() { _ = plain.Close() })
	s := NewReplayStore(plain, "")
	settled(t, plain, s.prefix)

	stalled := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	t.Cleanup(func() { _ = stalled.Close() })
	hook := &holdUntilMarkGone{probe: plain}
	stalled.AddHook(hook)
	ss := NewReplayStore(stalled, "")

	for attempt := range 5 {
		owner := "owner-lapse-" + strconv.Itoa(attempt)
		_, mark := replaymarker.ChargeKeys(s.prefix, owner)
		hook.mark.Store(&mark)
		hook.fired.Store(false)
		now := time.Now()
		sec := now.Truncate(time.Second)
		wideIAT := sec.Add(-2 * time.Second) // at the edge of the narrow window
		first, err := s.RememberCharged(ctx, "wide-"+owner, owner, 1, wideIAT, wideIAT.Add(10*time.Minute))
		require.NoError(t, err)
		require.True(t, first)
		cctx, cancel := context.WithTimeout(ctx, dpop.ReplayStoreTimeout)
		first, err = ss.RememberCharged(cctx, "narrow-"+owner, owner, 1, sec, sec.Add(2*time.Second))
		cancel()
		if !hook.fired.Load() {
			continue // a second boundary passed between the calls: the wide record was not dropped
		}
		t.Logf("the extension was held %v (the Verifier allows %v)", time.Duration(hook.waited.Load()), dpop.ReplayStoreTimeout)
		require.Less(t, time.Duration(hook.waited.Load()), dpop.ReplayStoreTimeout, "the stall fits the Verifier's budget")
		require.NoError(t, err)
		require.True(t, first)
		// The wide Verifier's replay of its own, still live, record.
		first, err = s.RememberCharged(ctx, "wide-"+owner, owner, 1, wideIAT, wideIAT.Add(10*time.Minute))
		require.False(t, first && err == nil, "the replay of a record that would have lived 10 minutes was ACCEPTED: its record was deleted and its mark had lapsed")
		return
	}
	t.Fatal("the drop never happened")
}

// holdUntilMarkGone holds every ExtendMarkScript round trip until mark
// no longer exists (read through probe), and records how long it waited.
type holdUntilMarkGone struct {
	probe  redis.UniversalClient
	mark   atomic.Pointer[string]
	fired  atomic.Bool
	waited atomic.Int64
}

func (*holdUntilMarkGone) DialHook(next redis.DialHook) redis.DialHook { return next }
func (*holdUntilMarkGone) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *holdUntilMarkGone) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && a[1] == replaymarker.ExtendMarkScript {
			h.fired.Store(true)
			start := time.Now()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for h.probe.Exists(context.Background(), *h.mark.Load()).Val() != 0 && time.Since(start) < 5*time.Second {
				<-tick.C
			}
			h.waited.Store(int64(time.Since(start)))
		}
		return next(ctx, cmd)
	}
}
