package authzen_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
)

// TestSemanticStopsTheBatchAcrossRequests: a batch split into several
// requests (WithBatchSize(1)) under deny_on_first_deny or
// permit_on_first_permit stops at the item that ends it: no request is
// sent for the items after it, which are denied with ErrNotEvaluated.
func TestSemanticStopsTheBatchAcrossRequests(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/todo/decisions-authorization-api-1_0-02.json")
	require.NoError(t, err)
	var sc scenario
	require.NoError(t, json.Unmarshal(data, &sc))
	// Three evaluations of one subject that the scenario expects to be
	// allowed, denied and allowed.
	var items []authzen.Request
	for _, i := range []int{11, 12, 13} {
		items = append(items, sc.Evaluation[i].Request.request())
		require.Equal(t, i != 12, sc.Evaluation[i].Expected, "evaluation %d of the scenario", i)
	}
	tests := []struct {
		name      string
		semantic  authzen.Semantic
		evaluated int // the items before and including the one that ends the batch
	}{
		{"deny_on_first_deny stops at the denial", authzen.DenyOnFirstDeny, 2},
		{"permit_on_first_permit stops at the permit", authzen.PermitOnFirstPermit, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, c := startTodo(t, authzen.WithBatchSize(1))
			ds := evaluatedAll(t, c, authzen.Request{}, items, authzen.WithSemantic(tt.semantic))
			require.Len(t, ds, len(items))
			for k, d := range ds {
				if k < tt.evaluated {
					assert.NoError(t, d.Cause, "item %d", k)
					assert.Equal(t, k != 1, d.Allowed(), "item %d", k)
				} else {
					require.ErrorIs(t, d.Cause, authzen.ErrNotEvaluated, "item %d", k)
				}
			}
			assert.Equal(t, uint64(tt.evaluated), c.Stats().PDPRequests, "one request per item up to the one that ends the batch")
		})
	}
}
