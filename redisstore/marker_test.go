package redisstore

// The keyspace's marker is decided on the server, in one atomic step, with
// the server's clock (issue 24). A marker write that lands late (its
// process paused, or its bytes held in a partitioned TCP connection and
// delivered on retransmission) must not overwrite a newer marker, one
// written after Redis lost its keys, with an older time: the proofs
// accepted before the loss would become acceptable again. The late write
// is modelled by a go-redis hook that holds the marker's write (a SET of
// the marker, or the EVAL that decides it) until released.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// holdMarkerWrite holds the first write of the marker (SET key ... or
// EVAL script 1 key ..., alone or in a pipeline) until release is closed,
// whatever the command's context.
type holdMarkerWrite struct {
	key     string
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func newHoldMarkerWrite(key string) *holdMarkerWrite {
	return &holdMarkerWrite{key: key, held: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdMarkerWrite) writes(cmd redis.Cmder) bool {
	a := cmd.Args()
	return len(a) >= 2 && a[0] == "set" && a[1] == h.key || len(a) >= 4 && a[0] == "eval" && a[3] == h.key
}

func (h *holdMarkerWrite) hold() {
	first := false
	h.once.Do(func() { first = true; close(h.held) })
	if first {
		<-h.release
	}
}

func (h *holdMarkerWrite) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holdMarkerWrite) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, h.writes) {
			h.hold()
		}
		return next(ctx, cmds)
	}
}
func (h *holdMarkerWrite) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.writes(cmd) {
			h.hold()
		}
		return next(ctx, cmd)
	}
}

// TestReplayLateMarkerWriteNeverMovesMarkerEarlier: replica Y finds a
// marker dated in the future and its write of the marker is held; the
// marker is rewritten by X, a proof P accepted, Redis loses its keys and
// X writes a newer marker; then Y's write lands. The marker stays the
// newer one and P is refused, not accepted a second time.
func TestReplayLateMarkerWriteNeverMovesMarkerEarlier(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	const prefix = "marker:late:"
	marker := prefix + SinceKey
	admin := rs.Client()
	ctx := t.Context()
	future := time.Now().Add(time.Hour).UnixMilli()
	require.NoError(t, admin.Set(ctx, marker, future, 0).Err())

	// Y: a replica whose rewrite of the future marker lands late.
	rdbY := rs.Client()
	hold := newHoldMarkerWrite(marker)
	rdbY.AddHook(hold)
	y := NewReplayStore(rdbY, prefix)
	yDone := make(chan error, 1)
	go func() {
		_, err := y.Remember(context.Background(), "y-proof", time.Now().Add(time.Hour))
		yDone <- err
	}()
	<-hold.held // Y read the future marker and TIME (T0); its write is in flight

	// X: another replica, on time.
	rdbX := rs.Client()
	x := NewReplayStore(rdbX, prefix)
	_, err := x.Remember(ctx, "x-first", time.Now().Add(time.Hour))
	require.Error(t, err, "the future marker is rewritten: the keyspace begins now (T1)")
	t1 := markerOf(t, admin, marker)
	require.Less(t, t1, future)

	// Proof P, accepted: its until is past T1 + lifetime.
	until := time.UnixMilli(t1 + x.lifetime.Milliseconds() + 20)
	ok := testkit.Must(x.Remember(ctx, "proof-P", until))(t)
	require.True(t, ok, "P is accepted")

	// Redis's clock passes T1 + 20 ms, so that a marker written from now
	// on refuses P; Redis loses its keys and the next Remember writes a
	// new marker (T3).
	waitRedisClock(t, admin, t1+50)
	require.NoError(t, admin.FlushAll(ctx).Err())
	_, err = x.Remember(ctx, "x-after-loss", time.Now().Add(time.Hour))
	require.Error(t, err)
	t3 := markerOf(t, admin, marker)
	ok, err = x.Remember(ctx, "proof-P-check", until)
	require.False(t, ok && err == nil, "control: a proof with P's until is refused under the new marker")

	// Y's late write lands.
	close(hold.release)
	<-yDone
	after := markerOf(t, admin, marker)
	require.Equal(t, t3, after, "the late write must not move the marker (T1=%d, T3=%d)", t1, t3)

	ok, err = x.Remember(ctx, "proof-P", until)
	require.False(t, ok && err == nil, "P, accepted before the loss, must not be accepted again")
}

// TestReplayMarkerWriteReturnsByTheContext: Remember returns by its
// context even while the marker's write is stuck (a frozen Redis, a client
// without ContextTimeoutEnabled), like the rest of its commands.
func TestReplayMarkerWriteReturnsByTheContext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		marker any // nil: missing
	}{
		{"missing", nil},
		{"in the future", time.Now().Add(time.Hour).UnixMilli()},
		{"not a time", "yesterday"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := redistest.Start(t)
			const prefix = "marker:bounded:"
			marker := prefix + SinceKey
			if tc.marker != nil {
				admin := rs.Client()
				require.NoError(t, admin.Set(t.Context(), marker, tc.marker, 0).Err())
				require.NoError(t, admin.Close())
			}
			rdb := rs.Client()
			hold := newHoldMarkerWrite(marker)
			rdb.AddHook(hold)
			t.Cleanup(func() {
				close(hold.release)
				_ = rdb.Close()
			})
			s := NewReplayStore(rdb, prefix)

			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := s.Remember(ctx, "proof", time.Now().Add(time.Hour))
				done <- err
			}()
			<-hold.held
			cancel()
			select {
			case err := <-done:
				require.ErrorIs(t, err, context.Canceled)
			case <-t.Context().Done(): // not reached: the test's own end
			case <-time.After(10 * time.Second): // a hang guard, not a threshold
				t.Fatal("Remember did not return after its context was cancelled")
			}
		})
	}
}

// waitRedisClock waits until Redis's clock (TIME) reaches ms (Unix
// milliseconds), asking it; bounded.
func waitRedisClock(t *testing.T, c *redis.Client, ms int64) {
	t.Helper()
	for range 1_000_000 {
		now := testkit.Must(c.Time(t.Context()).Result())(t)
		if now.UnixMilli() >= ms {
			return
		}
	}
	t.Fatalf("Redis's clock did not reach %d", ms)
}
