package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// failExtendMark makes the ExtendMarkScript round trip fail (a timeout or a
// reset connection right after the dropped records were deleted).
type failExtendMark struct{}

func (failExtendMark) DialHook(next redis.DialHook) redis.DialHook { return next }
func (failExtendMark) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (failExtendMark) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		if len(a) > 1 {
			if s, ok := a[1].(string); ok && s == replaymarker.ExtendMarkScript {
				err := errors.New("injected: connection reset after the DELs")
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmd)
	}
}

// TestAttackClusterMarkNotAtomicWithDrop: on a Cluster, RememberCharged
// deletes the records its charge dropped and only then, in a separate round
// trip, extends the key's mark to the dropped records' own expiry. If that
// last round trip fails (timeout, reset), the record is gone and the mark
// lives only the narrow charging Verifier's window; a wide-window Verifier
// then accepts the dropped proof's replay.
func TestAttackClusterMarkNotAtomicWithDrop(t *testing.T) {
	srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	require.True(t, srv.Real())
	ctx := t.Context()
	node := srv.Client()
	require.NoError(t, node.Do(ctx, "cluster", "addslotsrange", 0, 16383).Err())
	require.Eventually(t, func() bool {
		info, _ := node.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok")
	}, 30*time.Second, 10*time.Millisecond)
	wide := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	t.Cleanup(func() { _ = wide.Close() })
	narrow := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	narrow.AddHook(failExtendMark{})
	t.Cleanup(func() { _ = narrow.Close() })

	sw := NewReplayStore(wide, "", WithIATWindow(10*time.Minute, 2*time.Second))
	sn := NewReplayStore(narrow, "", WithIATWindow(2*time.Second, 2*time.Second))
	settled(t, wide, sw.prefix)
	vw, err := dpop.NewVerifier(dpop.WithReplayStore(sw), dpop.WithReplayKeyLimit(1), dpop.WithIATWindow(10*time.Minute, 2*time.Second))
	require.NoError(t, err)
	vn, err := dpop.NewVerifier(dpop.WithReplayStore(sn), dpop.WithReplayKeyLimit(1), dpop.WithIATWindow(2*time.Second, 2*time.Second))
	require.NoError(t, err)
	verify := func(v *dpop.Verifier, p string) error {
		_, err := v.Verify(ctx, dpop.Request{Proofs: []string{p}, Method: "GET", URL: testURL})
		return err
	}
	key, err := dpop.GenerateKey()
	require.NoError(t, err)
	now := time.Now()
	p0, err := key.WithClock(func() time.Time { return now.Add(-time.Second) }).Proof("GET", testURL, "", "")
	require.NoError(t, err)
	p1, err := key.WithClock(func() time.Time { return now }).Proof("GET", testURL, "", "")
	require.NoError(t, err)

	require.NoError(t, verify(vw, p0), "p0 accepted once by the wide Verifier")
	// The narrow Verifier charges p1: p0 is dropped (limit 1) and deleted;
	// the mark extension fails.
	t.Logf("narrow verify of p1: %v", verify(vn, p1))
	// Wait out the narrow window's mark (iat0 + ~4 s + 1 s); p0 is still well
	// inside the wide Verifier's minute.
	time.Sleep(67 * time.Second) // the narrow mark: iat0 + 4 s + ReplayStoreMargin + 1 s
	err = verify(vw, p0)
	t.Logf("replay: %v", err)
	require.Error(t, err, "the replay of p0, ~68 s old, inside the wide Verifier's 10 min window, must be refused")
}
