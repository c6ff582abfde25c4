package core

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReconfirm: every hit is read again after the call's wait; those the
// cache no longer serves are asked, and since asking is a wait too, the
// hits still served are read again after it, until a round finds none
// stale. An error from asking ends the rounds.
func TestReconfirm(t *testing.T) {
	t.Parallel()
	errRefused := errors.New("refused")
	tests := []struct {
		name string
		hits []int
		// served[i] is how many readings of hit i the cache serves.
		served  map[int]int
		askErr  error
		wantAsk [][]int
		wantErr error
	}{
		{name: "no hits", wantAsk: nil},
		{name: "every hit still served", hits: []int{0, 2}, served: map[int]int{0: 9, 2: 9}},
		{name: "one expired during the wait", hits: []int{0, 2}, served: map[int]int{0: 9}, wantAsk: [][]int{{2}}},
		{name: "another expired while the first was asked", hits: []int{0, 1, 2}, served: map[int]int{0: 9, 1: 1},
			wantAsk: [][]int{{2}, {1}}},
		{name: "asking fails for the whole call", hits: []int{0, 1}, served: map[int]int{1: 1}, askErr: errRefused,
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
			err := Reconfirm(append([]int(nil), tt.hits...), func(i int) bool {
				served[i]--
				return served[i] >= 0
			}, func(stale []int) error {
				asked = append(asked, append([]int(nil), stale...))
				return tt.askErr
			})
			require.ErrorIs(t, err, tt.wantErr) // nil: no error
			assert.Equal(t, tt.wantAsk, asked)
		})
	}
}
