package cache

import (
	"math"
	"testing"
	"time"
)

// TestLateTimerCannotExtendAnEntry makes the coarse clock lag, as it does
// when a busy machine runs the ticker's timer late, and requires that an
// entry past its time to live is not served on its word. The ticker is
// marked running without a timer, so nothing moves coarse during the test.
func TestLateTimerCannotExtendAnEntry(t *testing.T) {
	c, err := New[string, string, int](10)
	if err != nil {
		t.Fatal(err)
	}
	c.Add("g", "long", 2, time.Hour, 0) // first: an addition sweeps what expired
	c.Add("g", "short", 1, time.Nanosecond, 0)
	for c.clk.elapsed() <= time.Microsecond { // until "short" has surely expired
	}
	c.clk.coarse.Store(0) // the last tick read the clock at the epoch
	c.clk.horizon.Store(c.clk.margin.Load())
	c.clk.ticking.Store(true)
	if v, ok := c.Get("g", "short"); ok {
		t.Fatalf("an expired entry was served on a lagging coarse clock: %d", v)
	}
	if v, ok := c.Get("g", "long"); !ok || v != 2 {
		t.Fatalf("an entry an hour from expiry was not served: %d, %v", v, ok)
	}
}

// TestCoarseClockNeverGoesBack requires that a reading older than the
// coarse clock's does not move it back (a reader paused between reading the
// clock and storing it).
func TestCoarseClockNeverGoesBack(t *testing.T) {
	c, err := New[string, string, int](10)
	if err != nil {
		t.Fatal(err)
	}
	c.clk.advance(2 * time.Second)
	c.clk.advance(time.Second)
	if got := time.Duration(c.clk.coarse.Load()); got != 2*time.Second {
		t.Fatalf("coarse = %v, want 2s", got)
	}
}

// TestStoppedTickerLeavesNoHorizon requires that a hit cannot be served on
// the horizon of a ticker that has stopped (the cache went idle, so coarse
// no longer moves): the stopping tick puts the horizon back at never, so
// that a hit reads the clock until the ticker runs again.
func TestStoppedTickerLeavesNoHorizon(t *testing.T) {
	var k clock
	k.init(nil, func() uint64 { return 7 })
	if got := k.horizon.Load(); got != math.MaxInt64 {
		t.Fatalf("a new clock's horizon is %v, want never", time.Duration(got))
	}
	// A running ticker whose last tick saw the same lookups as now: this
	// tick stops it, and arms no timer.
	k.ticking.Store(true)
	k.activity.Store(7)
	k.horizon.Store(int64(time.Second))
	k.tick()
	if k.ticking.Load() {
		t.Fatal("the ticker runs on without lookups")
	}
	if got := k.horizon.Load(); got != math.MaxInt64 {
		t.Fatalf("a stopped ticker left the horizon at %v, want never", time.Duration(got))
	}
}
