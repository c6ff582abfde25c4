package dpop

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireAgree checks that a and b, replicas sharing a secret, each
// accept the fresh nonce of the other (and their own).
func requireAgree(t *testing.T, a, b *hmacNonces, msg string) {
	t.Helper()
	fromA, fromB := next(t, a), next(t, b)
	require.True(t, a.Valid(t.Context(), fromA), "%s: A refuses its own fresh nonce", msg)
	require.True(t, b.Valid(t.Context(), fromB), "%s: B refuses its own fresh nonce", msg)
	require.True(t, b.Valid(t.Context(), fromA), "%s: B refuses A's fresh nonce", msg)
	require.True(t, a.Valid(t.Context(), fromB), "%s: A refuses B's fresh nonce", msg)
}

// suspend lets d go by for B while A's machine is suspended: A's monotonic
// clock stands still and its wall clock goes on. A then serves a request.
func suspend(t *testing.T, ca, cb *hostClock, a *hmacNonces, d time.Duration) {
	t.Helper()
	ca.Step(d)
	cb.Pass(d)
	_ = next(t, a)
}

// TestHMACNoncesReturnWhenTheWallClockIsPutRight: replica A's wall clock
// is wrong ahead for a while (a bad time server's answer) and A serves
// requests meanwhile; once its clock is put right, A and B, whose clock
// was right all along, accept each other's fresh nonces again, at once and
// an hour later, and the nonces A minted while its clock was wrong are
// refused by both.
func TestHMACNoncesReturnWhenTheWallClockIsPutRight(t *testing.T) {
	t.Parallel()
	glitch := func(t *testing.T, ca *hostClock, a *hmacNonces, d time.Duration) string {
		t.Helper()
		ca.Step(d)
		minted := next(t, a)
		ca.Step(-d)
		return minted
	}
	for _, tc := range []struct {
		name string
		// run puts A's clock wrong and right again, and returns the
		// nonces that must be refused after it.
		run func(t *testing.T, ca, cb *hostClock, a *hmacNonces) []string
	}{
		{"ten minutes ahead for one request", func(t *testing.T, ca, _ *hostClock, a *hmacNonces) []string {
			return []string{glitch(t, ca, a, 10*time.Minute)}
		}},
		{"ahead for an hour of requests", func(t *testing.T, ca, cb *hostClock, a *hmacNonces) []string {
			ca.Step(10 * time.Minute)
			first := next(t, a)
			ca.Pass(time.Hour)
			cb.Pass(time.Hour)
			last := next(t, a)
			ca.Step(-10 * time.Minute)
			return []string{first, last}
		}},
		{"two glitches in a row", func(t *testing.T, ca, _ *hostClock, a *hmacNonces) []string {
			ca.Step(10 * time.Minute)
			first := next(t, a)
			ca.Step(20 * time.Minute)
			second := next(t, a)
			ca.Step(-30 * time.Minute)
			return []string{first, second}
		}},
		{"two glitches, each put right", func(t *testing.T, ca, cb *hostClock, a *hmacNonces) []string {
			first := glitch(t, ca, a, 10*time.Minute)
			ca.Pass(time.Minute)
			cb.Pass(time.Minute)
			return []string{first, glitch(t, ca, a, 20*time.Minute)}
		}},
		{"put right in two corrections", func(t *testing.T, ca, _ *hostClock, a *hmacNonces) []string {
			ca.Step(10 * time.Minute)
			minted := next(t, a)
			ca.Step(-5 * time.Minute)
			_ = next(t, a)
			ca.Step(-5 * time.Minute)
			return []string{minted}
		}},
		{"put right to within the tolerance behind", func(t *testing.T, ca, _ *hostClock, a *hmacNonces) []string {
			ca.Step(10 * time.Minute)
			minted := next(t, a)
			ca.Step(-10*time.Minute - NonceClockTolerance)
			_ = next(t, a)
			ca.Step(NonceClockTolerance)
			return []string{minted}
		}},
		{"put right to within the tolerance ahead", func(t *testing.T, ca, _ *hostClock, a *hmacNonces) []string {
			ca.Step(10 * time.Minute)
			minted := next(t, a)
			ca.Step(-10*time.Minute + NonceClockTolerance)
			_ = next(t, a)
			ca.Step(-NonceClockTolerance)
			return []string{minted}
		}},
		{"back to the line after a suspend", func(t *testing.T, ca, cb *hostClock, a *hmacNonces) []string {
			old := next(t, a)
			suspend(t, ca, cb, a, time.Hour)
			return []string{old, glitch(t, ca, a, 10*time.Minute)}
		}},
		// TestHMACNoncesNeverForgetTheStartLine (a-fix9b): the clock goes
		// wrong ahead not in one step but in five (a bad time source that
		// steps it 2 min at a time, each past NonceClockTolerance, A
		// serving a request after each), then is put right. Each step
		// left a line, and the source remembered only the last four: the
		// start line, the one B's time is on, was forgotten, and A stayed
		// ahead for good. The start line is never forgotten.
		{"TestHMACNoncesNeverForgetTheStartLine", func(t *testing.T, ca, _ *hostClock, a *hmacNonces) []string {
			var minted []string
			for range 5 {
				ca.Step(2 * time.Minute)
				minted = append(minted, next(t, a))
			}
			ca.Step(-10 * time.Minute) // put right
			_ = next(t, a)
			return minted
		}},
		{"after many suspends", func(t *testing.T, ca, cb *hostClock, a *hmacNonces) []string {
			old := next(t, a)
			for range 8 { // more suspends than the lines a source remembers
				suspend(t, ca, cb, a, time.Hour)
			}
			return []string{old, glitch(t, ca, a, 10*time.Minute)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ca, cb := &hostClock{wall: testNow}, &hostClock{wall: testNow}
			a := testNonces(t, ca, 5*time.Minute, nonceSecret)
			b := testNonces(t, cb, 5*time.Minute, nonceSecret)
			requireAgree(t, a, b, "before")

			refused := tc.run(t, ca, cb, a)
			require.Equal(t, cb.Wall(), ca.Wall(), "the test leaves A's clock right")
			for i, n := range refused {
				require.False(t, a.Valid(t.Context(), n), "A accepts nonce %d", i)
				require.False(t, b.Valid(t.Context(), n), "B accepts nonce %d", i)
			}
			requireAgree(t, a, b, "once A's clock is right")
			ca.Pass(time.Hour)
			cb.Pass(time.Hour)
			requireAgree(t, a, b, "an hour later")
		})
	}
}

// TestHMACNoncesClockMovesThatStay: where going back would make old
// nonces valid again, the source does not go back: after a suspended
// machine caught up (its monotonic clock stood still an hour), and when
// the wall clock is stepped back below every line of time the source
// held. Nonces older than their lifetime stay refused, and A keeps
// agreeing with B, whose clock is right, where A's clock is right too.
func TestHMACNoncesClockMovesThatStay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// run moves A's clock, and returns whether A's source keeps B's
		// time after it (it does unless it held no line at B's time).
		run func(t *testing.T, ca, cb *hostClock, a *hmacNonces) (onTime bool)
	}{
		{"suspended an hour", func(t *testing.T, ca, cb *hostClock, a *hmacNonces) bool {
			suspend(t, ca, cb, a, time.Hour)
			return true
		}},
		{"suspended an hour, then the wall clock a minute back", func(t *testing.T, ca, cb *hostClock, a *hmacNonces) bool {
			suspend(t, ca, cb, a, time.Hour)
			ca.Step(-time.Minute)
			return true
		}},
		{"suspended an hour, then the wall clock two hours back", func(t *testing.T, ca, cb *hostClock, a *hmacNonces) bool {
			suspend(t, ca, cb, a, time.Hour)
			ca.Step(-2 * time.Hour)
			return true
		}},
		{"wall clock stepped back below the start line", func(t *testing.T, ca, cb *hostClock, a *hmacNonces) bool {
			ca.Pass(time.Hour)
			cb.Pass(time.Hour)
			ca.Step(-2 * time.Hour)
			return true
		}},
		{"glitch ahead, then stepped back below every line", func(t *testing.T, ca, cb *hostClock, a *hmacNonces) bool {
			ca.Pass(time.Hour)
			cb.Pass(time.Hour)
			ca.Step(10 * time.Minute)
			_ = next(t, a)
			ca.Step(-10*time.Minute - 2*time.Hour)
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ca, cb := &hostClock{wall: testNow}, &hostClock{wall: testNow}
			a := testNonces(t, ca, 5*time.Minute, nonceSecret)
			b := testNonces(t, cb, 5*time.Minute, nonceSecret)
			old := next(t, a)

			onTime := tc.run(t, ca, cb, a)
			require.False(t, a.Valid(t.Context(), old), "an hour-old nonce is valid")
			fresh := next(t, a)
			require.True(t, a.Valid(t.Context(), fresh), "A refuses its own fresh nonce")
			if onTime {
				requireAgree(t, a, b, "after the move")
			}
			ca.Pass(time.Hour)
			cb.Pass(time.Hour)
			require.False(t, a.Valid(t.Context(), old), "an old nonce is valid an hour later")
			require.False(t, a.Valid(t.Context(), fresh), "an hour-old nonce is valid an hour later")
			if onTime {
				requireAgree(t, a, b, "an hour later")
			}
		})
	}
}

// TestHMACNoncesClockGlitchesUnderLoad: while requests are served
// concurrently, A's wall clock flips between right and ten minutes ahead
// (one request served each time it is ahead); once it is right, A agrees
// with B again. Run with -race.
func TestHMACNoncesClockGlitchesUnderLoad(t *testing.T) {
	t.Parallel()
	ca, cb := &hostClock{wall: testNow}, &hostClock{wall: testNow}
	a := testNonces(t, ca, 5*time.Minute, nonceSecret)
	b := testNonces(t, cb, 5*time.Minute, nonceSecret)
	fromB := next(t, b)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				_ = a.Valid(t.Context(), fromB)
				_, _ = a.Next(t.Context())
			}
		})
	}
	for range 200 {
		ca.Step(10 * time.Minute)
		_ = next(t, a)
		ca.Step(-10 * time.Minute)
	}
	wg.Wait()
	requireAgree(t, a, b, "after the glitches")
}

// TestHMACNoncesSlowRequestUndoesNoMove: a request that read A's clocks
// before A's machine was suspended, and gets to the source only after
// other requests moved it (to the wall clock's time after the suspend, then
// ahead with a glitch), does not undo those moves: once the glitch, which
// lasted for more requests, is put right, A agrees with B again.
func TestHMACNoncesSlowRequestUndoesNoMove(t *testing.T) {
	t.Parallel()
	ca, cb := &hostClock{wall: testNow}, &hostClock{wall: testNow}
	b := testNonces(t, cb, 5*time.Minute, nonceSecret)
	var meanwhile func()
	wall := func() time.Time {
		w := ca.Wall()
		if f := meanwhile; f != nil {
			meanwhile = nil
			f() // after the slow request read the clocks, before it got on
		}
		return w
	}
	a, err := newHMACNonces(nonceSecret, 5*time.Minute, nil, wall, ca.Elapsed)
	require.NoError(t, err)
	meanwhile = func() {
		suspend(t, ca, cb, a, time.Hour)
		ca.Pass(time.Second)
		cb.Pass(time.Second)
		ca.Step(10 * time.Minute)
		_ = next(t, a)
	}
	_ = next(t, a) // the slow request
	_ = next(t, a) // another, while the glitch lasts
	ca.Step(-10 * time.Minute)
	requireAgree(t, a, b, "once the glitch is put right")
}

// TestHMACNoncesTimeAllocatesNothing: reading the source's time allocates
// nothing, on its line, nor while the wall clock is stepped back below
// every line it held.
func TestHMACNoncesTimeAllocatesNothing(t *testing.T) {
	c := &hostClock{wall: testNow}
	n := testNonces(t, c, time.Minute, nonceSecret)
	c.Step(10 * time.Minute)
	_ = n.now()
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = n.now() }), "on its line")
	c.Step(-time.Hour)
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = n.now() }), "wall clock behind every line")
}

// BenchmarkHMACNoncesValid measures checking a fresh nonce, on the source's
// line and while the wall clock is stepped back below every line it held.
func BenchmarkHMACNoncesValid(b *testing.B) {
	for _, back := range []time.Duration{0, time.Hour} {
		b.Run("wall clock back "+back.String(), func(b *testing.B) {
			c := &hostClock{wall: testNow}
			n, err := newHMACNonces(nonceSecret, time.Minute, nil, c.Wall, c.Elapsed)
			require.NoError(b, err)
			nonce, err := n.Next(b.Context())
			require.NoError(b, err)
			c.Step(-back)
			b.ReportAllocs()
			for b.Loop() {
				if !n.Valid(b.Context(), nonce) {
					b.Fatal("refused")
				}
			}
		})
	}
}

// TestHMACNoncesReturnAfterAStartWithTheClockFast (a-fix9b): A's process
// starts while its wall clock is a few seconds fast (a VM or container
// started before NTP synced), and NTP then steps the wall clock back to
// the right time. By design the source keeps its start line, which is now
// `skew` ahead of the wall clock; A and B still agree (the skew is well
// under a step). A later transient glitch ahead (the a-rep9 F3 scenario,
// which h-nonce9 fixed) leaves a new line; when the wall clock is put
// right, no line is within NonceClockTolerance of it (the start line is
// `skew` above it), and A stayed ten minutes ahead for good: A and B
// refused each other's fresh nonces until A restarted. The source returns
// to the lowest line left that is not behind the wall clock, when it is
// ahead by no more than a step.
func TestHMACNoncesReturnAfterAStartWithTheClockFast(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{2 * time.Second, 5 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			ca, cb := &hostClock{wall: testNow.Add(skew)}, &hostClock{wall: testNow}
			a := testNonces(t, ca, 5*time.Minute, nonceSecret)
			b := testNonces(t, cb, 5*time.Minute, nonceSecret)
			_ = next(t, a)
			ca.Step(-skew) // NTP puts A's clock right
			_ = next(t, a)
			require.Equal(t, cb.Wall(), ca.Wall())
			requireAgree(t, a, b, "after NTP put A's clock right (A's source is skew ahead, by design)")

			ca.Pass(time.Minute)
			cb.Pass(time.Minute)
			ca.Step(10 * time.Minute) // one bad time server answer
			_ = next(t, a)
			ca.Step(-10 * time.Minute) // put right
			_ = next(t, a)
			require.Equal(t, cb.Wall(), ca.Wall())
			requireAgree(t, a, b, "once A's clock is right after the glitch")
			ca.Pass(time.Hour)
			cb.Pass(time.Hour)
			requireAgree(t, a, b, "an hour later")
		})
	}
}
