package redisstore

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/onetime"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// sentRounds records the round trips a client sends (a pipeline, or one
// command), each command as its arguments in text, a script named by
// what it is, and the marker script's caller's clock reading as "<clock>"
// when it is this process's clock (between from and the send).
type sentRounds struct {
	from   int64 // Unix milliseconds
	mu     sync.Mutex
	rounds [][]string
}

func (r *sentRounds) text(cmd redis.Cmder) string {
	a := cmd.Args()
	if len(a) >= 2 && a[0] == "eval" {
		switch a[1] {
		case replaymarker.Script:
			a = append([]any{"eval", "marker"}, a[2:]...)
			// ..., the clock reading, the generation seen, wrote
			if s, ok := a[len(a)-3].(string); ok {
				if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= r.from && ms <= time.Now().UnixMilli() {
					a[len(a)-3] = "<clock>"
				}
			}
			if _, ok := a[len(a)-2].(string); ok {
				a[len(a)-2] = "<gen>"
			}
		case onetime.Script:
			a = append([]any{"eval", "onetime"}, a[2:]...)
		}
	}
	return strings.TrimSuffix(fmt.Sprintln(a...), "\n")
}

func (r *sentRounds) add(cmds ...redis.Cmder) {
	var round []string
	for _, c := range cmds {
		if n := c.Name(); n == "hello" || n == "client" { // a new connection's handshake
			continue
		}
		round = append(round, r.text(c))
	}
	if round == nil {
		return
	}
	r.mu.Lock()
	r.rounds = append(r.rounds, round)
	r.mu.Unlock()
}

func (r *sentRounds) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.rounds
	r.rounds = nil
	return out
}

func (r *sentRounds) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}
func (r *sentRounds) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.add(cmd); return next(ctx, cmd) }
}
func (r *sentRounds) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.add(cmds...); return next(ctx, cmds) }
}

// TestReplayStoreReadsTheMarkerOnlyThroughItsScript: every call decides
// the keyspace's marker by its script (bound to Redis's run_id, given the
// process's clock reading to compare Redis's TIME with), in the
// round trip of the record it judges, and never by a GET of the marker or
// TIME; one-time records are the one-time script's, holding their writer,
// and with WithReplicas a record written or found is followed by WAIT on
// its connection. The exact round trips:
//   - Remember: SET NX PXAT, (WAIT), marker (wrote);
//   - Recorded: GET, marker; with WithReplicas and a record found, then
//     the one-time script with no writer and its rewrite, WAIT;
//   - RecordOnce: marker; then the one-time script (writer, until, its
//     rewrite with WithReplicas), (WAIT), marker (wrote).
func TestReplayStoreReadsTheMarkerOnlyThroughItsScript(t *testing.T) {
	t.Parallel()
	margin := fmt.Sprint(dpop.ReplayStoreMargin.Milliseconds())
	// the marker's script after a read, and after a record's write
	marker := "eval marker 1 t:since " + margin + " <clock> <gen> 0"
	markerWrote := "eval marker 1 t:since " + margin + " <clock> <gen> 1"
	until := time.UnixMilli(4_000_000_000_000).Add(time.Microsecond)
	for _, tc := range []struct {
		name     string
		opts     []ReplayOption
		wait     string
		rewrite  string
		replicas bool
	}{
		{name: "alone", rewrite: "0"},
		{name: "WithReplicas", opts: []ReplayOption{WithReplicas(1, 20*time.Millisecond)}, wait: "WAIT 1 20", rewrite: "1", replicas: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t) // no replica attached: WAIT 1 falls short
			c := srv.Client()
			s := NewReplayStore(c, "t:", tc.opts...)
			settled(t, c, s.prefix)
			sent := &sentRounds{from: time.Now().UnixMilli()}
			c.AddHook(sent)
			ctx := t.Context()
			issued := time.Now().Add(-time.Minute)
			withWait := func(cmds ...string) []string {
				if tc.wait == "" {
					return cmds
				}
				return append(cmds[:len(cmds)-1:len(cmds)-1], tc.wait, cmds[len(cmds)-1])
			}

			first, err := s.RecordOnce(ctx, "k", "w", until, issued)
			if tc.replicas {
				require.ErrorIs(t, err, errNotReplicated)
			} else {
				require.NoError(t, err)
				require.True(t, first)
			}
			require.Equal(t, [][]string{
				{marker},
				withWait("eval onetime 1 t:k w 4000000000001 "+tc.rewrite, markerWrote),
			}, sent.take(), "RecordOnce")

			found, err := s.Recorded(ctx, "k", issued)
			want := [][]string{{"get t:k", marker}}
			if tc.replicas {
				require.ErrorIs(t, err, errNotReplicated)
				want = append(want, []string{"eval onetime 1 t:k  0 1", tc.wait})
			} else {
				require.NoError(t, err)
				require.True(t, found)
			}
			require.Equal(t, want, sent.take(), "Recorded")

			_, err = s.Remember(ctx, "p", until)
			if tc.replicas {
				require.ErrorIs(t, err, errNotReplicated)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, [][]string{withWait("SET t:p 1 NX PXAT 4000000000001", markerWrote)}, sent.take(), "Remember")
		})
	}
}
