package redisstore_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/replaymarker"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestMarkerScriptVouchesOnlyForRedisTimeTheCallerReached runs the
// marker's script on the server (redis-server where installed) with a
// caller's clock reading behind or ahead of Redis's TIME, and markers
// whose high-water is ahead of it (Redis's clock stepped back): the
// keyspace vouches only while neither TIME nor the high-water is later
// than the caller's reading plus the margin, nor the reading later than
// TIME plus the margin, begins again when TIME fell
// below the high-water by more than the margin, and writes the
// high-water at most once a second. It refuses a marker of a lower
// generation than the caller has seen (a keyspace rolled back to an older
// copy of itself), and raises the generation when the caller wrote.
func TestMarkerScriptVouchesOnlyForRedisTimeTheCallerReached(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	ctx := t.Context()
	info := testkit.Must(c.Info(ctx, "server").Result())(t)
	_, rest, ok := strings.Cut(info, "run_id:")
	require.True(t, ok, "INFO server: %q", info)
	run := strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0])
	redisNow := testkit.Must(c.Time(ctx).Result())(t)
	T := redisNow.UnixMilli()
	margin := dpop.ReplayStoreMargin.Milliseconds()
	old := T - time.Hour.Milliseconds()
	// marker is "<start>@<of>", or with a high-water "<start>@<of>@<hw>@<gen>",
	// of generation 3.
	marker := func(start int64, of string, hw ...int64) string {
		v := fmt.Sprintf("%d@%s", start, of)
		for _, h := range hw {
			v += fmt.Sprintf("@%d@3", h)
		}
		return v
	}

	const clockGen = "<TIME>"
	for _, tc := range []struct {
		name   string
		marker string // "": missing
		caller int64
		answer string
		// start is the marker's time answered (0: TIME, as begun now).
		start int64
		// kept: the marker is left as it was (no high-water written).
		kept bool
		// known is the highest generation the caller has seen, wrote
		// that it wrote a record; gen is the generation answered (and
		// stored), clockGen for TIME in microseconds.
		known int64
		wrote bool
		gen   string
	}{
		{name: "missing", caller: T, answer: replaymarker.Began, gen: clockGen},
		{name: "in step", marker: marker(old, run, T-5000), caller: T, answer: replaymarker.Vouched, start: old, gen: "3"},
		{name: "in step, the caller saw this generation", marker: marker(old, run, T-5000), caller: T, known: 3, answer: replaymarker.Vouched, start: old, gen: "3"},
		{name: "the caller wrote: the generation raised", marker: marker(old, run, T-5000), caller: T, known: 3, wrote: true, answer: replaymarker.Vouched, start: old, gen: "4"},
		{name: "a generation below the caller's: rolled back", marker: marker(old, run, T-5000), caller: T, known: 4, answer: replaymarker.Began, gen: clockGen},
		{name: "begun above TIME when the caller saw more", caller: T, known: 8_999_999_999_999_990, answer: replaymarker.Began, gen: "8999999999999991"},
		{name: "begun at most at the highest generation", caller: T, known: replaymarker.MaxGeneration, answer: replaymarker.Began, gen: "9000000000000000"},
		{name: "a write at the highest generation leaves it", marker: fmt.Sprintf("%d@%s@%d@%d", old, run, T-5000, replaymarker.MaxGeneration), caller: T, known: replaymarker.MaxGeneration, wrote: true, answer: replaymarker.Vouched, start: old, gen: "9000000000000000"},
		{name: "caller behind by more than the margin", marker: marker(old, run, T+5000), caller: T - margin - 5000, answer: replaymarker.ClockAhead, start: old, kept: true, gen: "3"},
		{name: "caller behind within the margin", marker: marker(old, run, T+5000), caller: T - margin + 10000, answer: replaymarker.Vouched, start: old, kept: true, gen: "3"},
		{name: "caller ahead by more than the margin", marker: marker(old, run, T+5000), caller: T + margin + 10000, answer: replaymarker.CallerAhead, start: old, kept: true, gen: "3"},
		{name: "caller ahead within the margin", marker: marker(old, run, T+5000), caller: T + margin - 10000, answer: replaymarker.Vouched, start: old, kept: true, gen: "3"},
		{name: "clock stepped back below the high-water by more than the margin", marker: marker(old, run, T+margin+5000), caller: T, answer: replaymarker.Began, gen: clockGen},
		{name: "clock stepped back within the margin", marker: marker(old, run, T+margin/2), caller: T, answer: replaymarker.Vouched, start: old, kept: true, gen: "3"},
		{name: "caller behind the high-water by more than the margin", marker: marker(old, run, T+margin/2), caller: T - margin/2 - 5000, answer: replaymarker.ClockAhead, start: old, kept: true, gen: "3"},
		{name: "bare time bound, at TIME", marker: strconv.FormatInt(old, 10), caller: T, known: 7, answer: replaymarker.Vouched, start: old, gen: clockGen},
		{name: "bare time bound, at the caller's generation when higher", marker: strconv.FormatInt(old, 10), caller: T, known: 8_999_999_999_999_990, answer: replaymarker.Vouched, start: old, gen: "8999999999999990"},
		{name: "run_id marker upgraded", marker: marker(old, run), caller: T, answer: replaymarker.Vouched, start: old, gen: clockGen},
		{name: "another run", marker: marker(old, strings.Repeat("0", 40), T), caller: T, answer: replaymarker.Began, gen: clockGen},
		{name: "high-water not a time", marker: unreadableHighWater(old, run), caller: T, answer: replaymarker.Began, gen: clockGen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "clock:" + tc.name
			if tc.marker != "" {
				require.NoError(t, c.Set(ctx, key, tc.marker, 0).Err())
			}
			wrote := "0"
			if tc.wrote {
				wrote = "1"
			}
			res := testkit.Must(c.Eval(ctx, replaymarker.Script, []string{key}, margin, tc.caller, tc.known, wrote).StringSlice())(t)
			after := testkit.Must(c.Time(ctx).Result())(t)
			require.Len(t, res, 3)
			require.Equal(t, tc.answer, res[1], "answer")
			if tc.gen == clockGen { // TIME in microseconds
				g := testkit.Must(strconv.ParseInt(res[2], 10, 64))(t)
				require.GreaterOrEqual(t, g, T*1000-1000, "generation")
				require.LessOrEqual(t, g, after.UnixMicro(), "generation")
				tc.gen = res[2]
			}
			require.Equal(t, tc.gen, res[2], "generation")
			stored := testkit.Must(c.Get(ctx, key).Result())(t)
			switch {
			case tc.kept:
				require.Equal(t, tc.marker, stored, "no write: the high-water is within a second")
			case tc.answer == replaymarker.Began:
				began := testkit.Must(strconv.ParseInt(res[0], 10, 64))(t)
				require.GreaterOrEqual(t, began, T, "begun at TIME")
				require.LessOrEqual(t, began, after.UnixMilli()+1)
				require.Equal(t, fmt.Sprintf("%d@%s@%d@%s", began, run, began, tc.gen), stored)
			default:
				require.Equal(t, strconv.FormatInt(tc.start, 10), res[0], "the marker's time does not move")
				start, of, hw, gen := splitMarker(t, stored)
				require.Equal(t, tc.start, start)
				require.Equal(t, run, of)
				require.Equal(t, tc.gen, gen, "the generation stored")
				require.GreaterOrEqual(t, hw, T, "the high-water raised to TIME")
				require.LessOrEqual(t, hw, after.UnixMilli()+1)
			}
		})
	}

	t.Run("caller reading not a time", func(t *testing.T) {
		require.NoError(t, c.Set(ctx, "clock:bad", marker(old, run, T), 0).Err())
		err := c.Eval(ctx, replaymarker.Script, []string{"clock:bad"}, margin, "soon", 0, "0").Err()
		require.ErrorContains(t, err, "clock reading")
		v := testkit.Must(c.Get(ctx, "clock:bad").Result())(t)
		require.Equal(t, marker(old, run, T), v, "nothing written")
		err = c.Eval(ctx, replaymarker.Script, []string{"clock:bad"}, margin, T, "9000000000000001", "0").Err()
		require.ErrorContains(t, err, "generation", "past the highest generation")
	})
}

// unreadableHighWater is a marker of run whose high-water is no time.
func unreadableHighWater(start int64, run string) string {
	return fmt.Sprintf("%d@%s@soon", start, run)
}

// splitMarker parses "<ms>@<run_id>@<hw>@<generation>".
func splitMarker(t *testing.T, v string) (start int64, run string, hw int64, gen string) {
	t.Helper()
	parts := strings.Split(v, "@")
	require.Len(t, parts, 4, "marker %q", v)
	start = testkit.Must(strconv.ParseInt(parts[0], 10, 64))(t)
	hw = testkit.Must(strconv.ParseInt(parts[2], 10, 64))(t)
	return start, parts[1], hw, parts[3]
}
