package core

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/invalidationtest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/invalidation"
)

// TestReconfirm: every decision read before the call's last wait (a hit,
// or a GRANT the call asked for: a-client14b F1) is checked again once
// the call's requests are done; those that no longer hold are asked, and
// since asking is a wait too, every decision, those just asked included,
// is checked again after it, until a round finds none stale. One asked
// again that goes stale again fails closed rather than being asked a
// second time (the rounds are bounded). An error from asking ends the
// rounds.
func TestReconfirm(t *testing.T) {
	t.Parallel()
	errRefused := errors.New("refused")
	tests := []struct {
		name string
		read []int
		// served[i] is how many checks of decision i find it holding;
		// once asked, refreshed[i] is (9 when not given).
		served, refreshed map[int]int
		askErr            error
		wantAsk           [][]int
		wantFailed        []int
		wantErr           error
	}{
		{name: "nothing read", wantAsk: nil},
		{name: "every decision still holds", read: []int{0, 2}, served: map[int]int{0: 9, 2: 9}},
		{name: "one expired during the wait", read: []int{0, 2}, served: map[int]int{0: 9}, wantAsk: [][]int{{2}}},
		{name: "another expired while the first was asked", read: []int{0, 1, 2}, served: map[int]int{0: 9, 1: 1},
			wantAsk: [][]int{{2}, {1}}},
		// a-client14b F1: the answer to the re-ask is checked too.
		{name: "the one asked again goes stale while another is asked", read: []int{0, 1}, served: map[int]int{1: 1},
			refreshed: map[int]int{0: 1}, wantAsk: [][]int{{0}, {1}}, wantFailed: []int{0}},
		{name: "the one asked again goes stale at once: fails closed", read: []int{0},
			refreshed: map[int]int{0: 0}, wantAsk: [][]int{{0}}, wantFailed: []int{0}},
		{name: "asking fails for the whole call", read: []int{0, 1}, served: map[int]int{1: 1}, askErr: errRefused,
			wantAsk: [][]int{{0}}, wantErr: errRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			served := map[int]int{}
			for i, n := range tt.served {
				served[i] = n
			}
			var asked [][]int
			var failed []int
			err := Reconfirm(append([]int(nil), tt.read...), func(i int) bool {
				served[i]--
				return served[i] >= 0
			}, func(stale []int) error {
				asked = append(asked, append([]int(nil), stale...))
				for _, i := range stale {
					served[i] = 9
					if n, ok := tt.refreshed[i]; ok {
						served[i] = n
					}
				}
				return tt.askErr
			}, func(i int) { failed = append(failed, i) })
			require.ErrorIs(t, err, tt.wantErr) // nil: no error
			assert.Equal(t, tt.wantAsk, asked)
			assert.Equal(t, tt.wantFailed, failed)
		})
	}
}

// TestConfirm (a-client15 F1-F4): every GRANT a call read before its last
// wait passes one check before it leaves the client, would the cache serve
// it now (Confirm). What the cache holds for its key, the newest answer
// the client had, wins: a GRANT holds, a DENY replaces it (F3), whatever
// purge of another token came (F4). With nothing there, a hit no longer
// holds, and an answer holds by its request's Stamp: no purge since, the
// channel trusted at the send trusted still (F1), younger than the longer
// of the allow TTL (30 s) and the timeout (a minute: F2).
func TestConfirm(t *testing.T) {
	t.Parallel()
	grant, deny := true, false
	lose := func(e *confirmEnv) { e.bus.Lose(errors.New("connection reset")) }
	tests := []struct {
		name string
		// bus gives the client a channel, trusted from the start; before
		// runs before the request's Stamp, wait after it; stored is what
		// the request's answer stores (nil: nothing); newer is a later
		// answer's verdict, stored after wait.
		bus           bool
		before, wait  func(e *confirmEnv)
		stored, newer *bool
		// hit checks a cache hit (no Stamp) rather than an answer.
		hit         bool
		wantAllowed bool
		wantOK      bool
	}{
		{name: "an answer, nothing cached, nothing happened", wantAllowed: true, wantOK: true},
		{name: "an answer the cache holds, another token purged", stored: &grant,
			wait: func(e *confirmEnv) { e.c.purge(bearer("other")) }, wantAllowed: true, wantOK: true},
		{name: "an answer nothing is cached of, another token purged", wait: func(e *confirmEnv) { e.c.purge(bearer("other")) }},
		{name: "an answer, the cache holds a newer DENY", stored: &grant, newer: &deny, wantOK: true},
		{name: "an answer, its cached GRANT expired, younger than the timeout", stored: &grant,
			wait: func(e *confirmEnv) { e.clk.Advance(45 * time.Second) }, wantAllowed: true, wantOK: true},
		{name: "an answer older than the timeout and the allow TTL", stored: &grant,
			wait: func(e *confirmEnv) { e.clk.Advance(61 * time.Second) }},
		{name: "an answer, trusted at the send, the heartbeat stale now", bus: true, stored: &grant,
			wait: func(e *confirmEnv) { e.clk.Advance(invalidation.DefaultTrust) }},
		{name: "an answer, trusted at the send, the channel lost", bus: true, stored: &grant, wait: lose},
		{name: "an answer, trusted at the send, the channel lost and back", bus: true, stored: &grant,
			wait: func(e *confirmEnv) { lose(e); e.clk.Advance(time.Second); e.bus.Beat(e.clk.Now()) }},
		{name: "an answer sent while the channel was lost, still lost", bus: true, before: lose, stored: &grant, wait: lose,
			wantAllowed: true, wantOK: true},
		{name: "a hit the cache serves", hit: true, stored: &grant, wantAllowed: true, wantOK: true},
		{name: "a hit the cache no longer serves", hit: true, stored: &grant,
			wait: func(e *confirmEnv) { e.clk.Advance(31 * time.Second) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := &confirmEnv{clk: testkit.NewClock(time.Unix(1e9, 0))}
			e.c = newCore(t, nil, func(s *Settings) {
				s.Now, s.AllowTTL, s.DenyTTL = e.clk.Now, 30*time.Second, 30*time.Second
				if tt.bus {
					e.bus = invalidationtest.New()
					s.Invalidator = e.bus
				}
			})
			if tt.bus {
				<-e.bus.Joined
				e.bus.Beat(e.clk.Now())
			}
			var cl Call
			require.NoError(t, e.c.Own(&cl, false))
			answer := func(v *bool) {
				if v != nil {
					w := e.c.cache.writer(cl.ID)
					w.Add("k", *v)
					w.Close()
				}
			}
			if tt.before != nil {
				tt.before(e)
			}
			s := e.c.stamp()
			answer(tt.stored)
			if tt.wait != nil {
				tt.wait(e)
			}
			answer(tt.newer)
			at := &s
			if tt.hit {
				at = nil
			}
			allowed, ok := e.c.Confirm(e.c.Regroup(&cl), "k", at)
			assert.Equal(t, tt.wantOK, ok)
			if ok {
				assert.Equal(t, tt.wantAllowed, allowed)
			}
		})
	}
}

// confirmEnv is what a TestConfirm row acts on.
type confirmEnv struct {
	clk *testkit.Clock
	c   *Core
	bus *invalidationtest.Bus
}
