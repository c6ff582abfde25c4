package core

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
