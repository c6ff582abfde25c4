package authzen_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
)

// TestEveryAnswerReplacesTheCachedDecision: whatever the PDP answers for an
// evaluation replaces what the cache held for it. An answer the cache does
// not keep (a denial that explains itself in its context, an item's error)
// removes the older permit: the next Evaluate asks the PDP instead of
// serving a decision older than the one the client has had since. A real
// PDP does not change its mind on demand, so a stand-in answers.
func TestEveryAnswerReplacesTheCachedDecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// after is the PDP's answer once the permission is revoked.
		after string
		// call asks the PDP after the change, past the cache.
		call func(t *testing.T, c *authzen.Client)
	}{
		{"a denial with reasons (Evaluate, NoCache)", `{"decision":false,"context":{"reason":"the user's role was removed"}}`,
			func(t *testing.T, c *authzen.Client) {
				d := evaluated(t, c, req, authzen.NoCache())
				assert.False(t, d.Allowed())
			}},
		{"an item's error (Evaluations, NoCache)", `{"evaluations":[{"decision":false,"context":{"error":{"status":404,"message":"no such document"}}}]}`,
			func(t *testing.T, c *authzen.Client) {
				ds := evaluatedAll(t, c, authzen.Request{}, []authzen.Request{req}, authzen.NoCache())
				assert.False(t, ds[0].Allowed())
			}},
		{"a denial with reasons under a semantic", `{"evaluations":[{"decision":false,"context":{"reason":"revoked"}}]}`,
			func(t *testing.T, c *authzen.Client) {
				ds := evaluatedAll(t, c, authzen.Request{}, []authzen.Request{req}, authzen.WithSemantic(authzen.DenyOnFirstDeny))
				assert.False(t, ds[0].Allowed())
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var revoked atomic.Bool
			var asked atomic.Int32
			c, _ := standIn(t, func(w http.ResponseWriter, _ *http.Request) {
				asked.Add(1)
				w.Header().Set("Content-Type", "application/json")
				if revoked.Load() {
					_, _ = w.Write([]byte(tt.after))
					return
				}
				_, _ = w.Write([]byte(`{"decision":true}`))
			})
			d := evaluated(t, c, req)
			require.True(t, d.Allowed()) // cached

			revoked.Store(true)
			tt.call(t, c)
			revoked.Store(false) // a new question would be answered afresh

			before := asked.Load()
			d = evaluated(t, c, req)
			assert.False(t, d.Cached, "the older permit is served in place of the PDP's newer answer")
			assert.Equal(t, before+1, asked.Load(), "the Evaluate asks the PDP")
		})
	}
}
