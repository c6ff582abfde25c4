package cache

import (
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
	for c.elapsed() <= time.Microsecond { // until "short" has surely expired
	}
	c.coarse.Store(0) // the last tick read the clock at the epoch
	c.ticking.Store(true)
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
	c.advance(2 * time.Second)
	c.advance(time.Second)
	if got := time.Duration(c.coarse.Load()); got != 2*time.Second {
		t.Fatalf("coarse = %v, want 2s", got)
	}
}
