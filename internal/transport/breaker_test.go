package transport

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// breakerStep is one event of a breaker's life: a request that allow lets
// through or not, and the outcome it reports; or time passing.
type breakerStep struct {
	wait    time.Duration // advance the clock first
	outcome outcome       // the request's outcome, when allowed
	refused bool          // allow must refuse the request
	state   BreakerState  // the state after the step
}

// TestBreakerStateMachine drives a 2-failure, 5 s breaker through its
// states, one table row per rule of WithBreaker.
func TestBreakerStateMachine(t *testing.T) {
	t.Parallel()
	const coolDown = 5 * time.Second
	fail := breakerStep{outcome: outcomeFailure, state: BreakerClosed} // the first of two
	trip := breakerStep{outcome: outcomeFailure, state: BreakerOpen}   // the second
	tests := []struct {
		name  string
		steps []breakerStep
	}{
		{"consecutive failures open it", []breakerStep{
			{outcome: outcomeFailure, state: BreakerClosed},
			{outcome: outcomeFailure, state: BreakerOpen},
			{refused: true, state: BreakerOpen},
		}},
		{"a success resets the count", []breakerStep{
			fail, {outcome: outcomeSuccess, state: BreakerClosed}, fail, trip,
		}},
		{"a neutral outcome neither counts nor resets", []breakerStep{
			fail, {outcome: outcomeNeutral, state: BreakerClosed}, trip,
		}},
		{"open until the cool-down is over, then half-open", []breakerStep{
			fail, trip,
			{wait: coolDown - time.Nanosecond, refused: true, state: BreakerOpen},
			{wait: time.Nanosecond, outcome: outcomeSuccess, state: BreakerClosed},
		}},
		{"a successful probe closes it and forgets the failures", []breakerStep{
			fail, trip,
			{wait: coolDown, outcome: outcomeSuccess, state: BreakerClosed},
			fail, trip,
		}},
		{"a failed probe reopens it for a new cool-down", []breakerStep{
			fail, trip,
			{wait: coolDown, outcome: outcomeFailure, state: BreakerOpen},
			{wait: coolDown - time.Nanosecond, refused: true, state: BreakerOpen},
			{wait: time.Nanosecond, outcome: outcomeSuccess, state: BreakerClosed},
		}},
		{"a neutral probe leaves it half-open for the next", []breakerStep{
			fail, trip,
			{wait: coolDown, outcome: outcomeNeutral, state: BreakerHalfOpen},
			{outcome: outcomeSuccess, state: BreakerClosed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := testkit.NewClock(time.Unix(1e9, 0))
			var changes [][2]BreakerState
			b := NewBreaker(2, coolDown, clk.Now, func(from, to BreakerState) {
				changes = append(changes, [2]BreakerState{from, to})
			})
			state := BreakerClosed
			for i, s := range tt.steps {
				clk.Advance(s.wait)
				allowed, probe := b.allow()
				require.Equal(t, !s.refused, allowed, "step %d", i)
				if allowed {
					assert.Equal(t, state != BreakerClosed, probe, "step %d: a request after the cool-down is the probe", i)
					b.done(probe, s.outcome)
				}
				assert.Equal(t, s.state, b.Current(), "step %d", i)
				state = b.Current()
			}
			for _, c := range changes {
				assert.NotEqual(t, c[0], c[1], "onChange reports transitions only")
			}
		})
	}
}

// TestBreakerOneProbeAtATime: while the probe is out, every other request
// is refused, and requests let through before the breaker opened do not
// change it when they end.
func TestBreakerOneProbeAtATime(t *testing.T) {
	t.Parallel()
	clk := testkit.NewClock(time.Unix(1e9, 0))
	b := NewBreaker(1, time.Second, clk.Now, nil)
	early, _ := b.allow() // under way when the breaker opens
	require.True(t, early)
	ok, probe := b.allow()
	require.True(t, ok)
	b.done(probe, outcomeFailure)
	require.Equal(t, BreakerOpen, b.Current())
	b.done(false, outcomeSuccess) // the early request ends: only the probe decides
	assert.Equal(t, BreakerOpen, b.Current())

	clk.Advance(time.Second)
	assert.Equal(t, BreakerHalfOpen, b.Current(), "an open breaker past its cool-down reads half-open")
	ok, probe = b.allow()
	require.True(t, ok)
	require.True(t, probe)
	for range 3 {
		other, _ := b.allow()
		assert.False(t, other, "a second request while the probe is out")
	}
	b.done(true, outcomeSuccess)
	assert.Equal(t, BreakerClosed, b.Current())
	ok, probe = b.allow()
	assert.True(t, ok)
	assert.False(t, probe)
}

func TestBreakerDisabledAllowsEverything(t *testing.T) {
	t.Parallel()
	b := NewBreaker(0, time.Second, time.Now, nil)
	require.Nil(t, b)
	for range 10 {
		ok, probe := b.allow()
		require.True(t, ok)
		require.False(t, probe)
		b.done(probe, outcomeFailure)
	}
	assert.Equal(t, BreakerClosed, b.Current())
}

func TestBreakerStateString(t *testing.T) {
	t.Parallel()
	for state, want := range map[BreakerState]string{
		BreakerClosed: "closed", BreakerOpen: "open", BreakerHalfOpen: "half-open", 9: "BreakerState(9)",
	} {
		assert.Equal(t, want, state.String())
	}
}
