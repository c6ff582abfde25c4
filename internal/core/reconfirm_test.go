package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/invalidationtest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/internal/transport"
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
			again := map[int]bool{}
			err := Reconfirm(append([]int(nil), tt.read...), func(i int, isAgain bool) bool {
				assert.Equal(t, again[i], isAgain, "decision %d: holds is told whether it was asked again", i)
				served[i]--
				return served[i] >= 0
			}, func(stale []int) error {
				asked = append(asked, append([]int(nil), stale...))
				for _, i := range stale {
					again[i] = true
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

// TestConfirm (a-client15 F1-F4, a-fix15b F1, F2, F4): every GRANT a call
// read before its last wait, a hit or an answer's, is kept only while the
// cache serves it now (Confirm). What the cache holds for its key, the
// newest answer the client had, wins: a GRANT holds, a DENY replaces it
// (a-client15 F3), whatever purge of another token came (a-client15 F4,
// a-fix15b F1: no count of the client's purges decides anything). Nothing
// there, whatever the reason, means it no longer holds (it is asked
// again): never stored, a newer DENY the cache does not keep (a-fix15b
// F2), expired though younger than the timeout (a-fix15b F4), purged, or
// the channel not trusted (a-client15 F1).
func TestConfirm(t *testing.T) {
	t.Parallel()
	grant, deny := true, false
	lose := func(e *confirmEnv) { e.bus.Lose(errors.New("connection reset")) }
	tests := []struct {
		name string
		// bus gives the client a channel, trusted from the start; stored
		// is what the call's answer stores (nil: nothing); wait runs after
		// it; newer is a later answer's verdict, stored after wait, with
		// a deny TTL of zero when noDenyTTL.
		bus           bool
		wait          func(e *confirmEnv)
		stored, newer *bool
		noDenyTTL     bool
		wantAllowed   bool
		wantOK        bool
	}{
		{name: "a GRANT the cache holds, nothing happened", stored: &grant, wantAllowed: true, wantOK: true},
		{name: "a GRANT the cache holds, another token purged", stored: &grant,
			wait: func(e *confirmEnv) { e.c.purge(bearer("other")) }, wantAllowed: true, wantOK: true},
		{name: "nothing cached, nothing happened: asked again"},
		{name: "the cache holds a newer DENY", stored: &grant, newer: &deny, wantOK: true},
		{name: "a newer DENY the cache does not keep (deny TTL 0): asked again", stored: &grant, newer: &deny, noDenyTTL: true},
		{name: "the cached GRANT expired, younger than the timeout: asked again", stored: &grant,
			wait: func(e *confirmEnv) { e.clk.Advance(45 * time.Second) }},
		{name: "the token purged", stored: &grant, wait: func(e *confirmEnv) { e.c.purge(e.id) }},
		{name: "trusted, the heartbeat stale now", bus: true, stored: &grant,
			wait: func(e *confirmEnv) { e.clk.Advance(invalidation.DefaultTrust) }},
		{name: "trusted, the channel lost", bus: true, stored: &grant, wait: lose},
		{name: "trusted, the channel lost and back", bus: true, stored: &grant,
			wait: func(e *confirmEnv) { lose(e); e.clk.Advance(time.Second); e.bus.Beat(e.clk.Now()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := &confirmEnv{clk: testkit.NewClock(time.Unix(1e9, 0))}
			e.c = newCore(t, nil, func(s *Settings) {
				s.Now, s.AllowTTL, s.DenyTTL = e.clk.Now, 30*time.Second, 30*time.Second
				if tt.noDenyTTL {
					s.DenyTTL = 0
				}
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
			e.id = cl.ID
			answer := func(v *bool) {
				if v != nil {
					w := e.c.cache.writer(cl.ID)
					w.Add("k", *v)
					w.Close()
				}
			}
			answer(tt.stored)
			if tt.wait != nil {
				tt.wait(e)
			}
			answer(tt.newer)
			allowed, ok := Confirm(e.c.Regroup(&cl), "k")
			assert.Equal(t, tt.wantOK, ok)
			if ok {
				assert.Equal(t, tt.wantAllowed, allowed)
			}
		})
	}
}

// TestInTime: a GRANT asked again that the cache could not store holds
// while the call's deadline has not passed, on the client's clock and on
// the monotonic one (a-client15 F2's bound, a single Check's).
func TestInTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		bound   bool
		advance time.Duration
		cancel  bool
		want    bool
	}{
		{name: "within the timeout", bound: true, advance: 59 * time.Second, want: true},
		{name: "past the timeout on the client's clock", bound: true, advance: time.Minute},
		{name: "the call's context ended", bound: true, cancel: true},
		{name: "a call never bound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := testkit.NewClock(time.Unix(1e9, 0))
			c := newCore(t, nil, func(s *Settings) { s.Now, s.Timeout = clk.Now, time.Minute })
			var cl Call
			require.NoError(t, c.Own(&cl, false))
			ctx := t.Context()
			if tt.bound {
				var cancel context.CancelFunc
				ctx, cancel = c.Bound(ctx, &cl)
				defer cancel()
				if tt.cancel {
					cancel()
				}
			}
			clk.Advance(tt.advance)
			assert.Equal(t, tt.want, c.InTime(ctx, &cl))
		})
	}
}

// confirmEnv is what a TestConfirm row acts on.
type confirmEnv struct {
	clk *testkit.Clock
	c   *Core
	bus *invalidationtest.Bus
	id  transport.Ident // the call's token
}
