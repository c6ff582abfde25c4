package pep_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// Issue 11, breaks 1 and 2, against the reference server: uma reads docs
// and nothing else (corp fixture). The wildcard "*" names every resource of
// the client in the wire format; a Check of it must never be answered by
// another pair's entry, and only ListGranted may ask for it.
func TestWildcardAgainstReferenceServer(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	for _, kind := range tokenKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c := e.client("uma", kind)

			for _, scope := range []string{"read", "no-such-scope", "write"} {
				d, err := c.Check(t.Context(), "*", scope)
				require.ErrorIs(t, err, pep.ErrInvalidArgument, scope)
				assert.False(t, d.Allowed(), scope)
				assert.Equal(t, pep.Deny, d.Status)
				assert.Equal(t, "*", d.Resource, "a decision is never renamed")
			}
			r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "*", Scopes: []string{"read"}}})
			require.ErrorIs(t, err, pep.ErrInvalidArgument)
			assert.False(t, r.Allowed())
			r, err = c.CheckMany(t.Context(), []pep.Resource{
				{Name: "docs", Scopes: []string{"read"}}, {Name: "*", Scopes: []string{"no-such-scope"}},
			})
			require.ErrorIs(t, err, pep.ErrInvalidArgument)
			assert.False(t, r.Allowed())
			for _, d := range r.Decisions {
				assert.False(t, d.Allowed(), "nothing of a refused call is allowed, %s/%s included", d.Resource, d.Scope)
			}
			assert.Zero(t, c.Stats().GatewayRequests, "nothing was sent")

			// The real answers, for comparison: uma reads docs only.
			d, err := c.Check(t.Context(), "docs", "read")
			require.NoError(t, err)
			assert.True(t, d.Allowed())
			d, err = c.Check(t.Context(), "reports", "read")
			require.NoError(t, err)
			assert.False(t, d.Allowed())

			// ListGranted may ask for the wildcard; it lists what the
			// gateway grants, each pair decided by its own entry.
			want := []pep.Permission{{Resource: "docs", Scope: "read", Status: pep.Grant}}
			for _, res := range [][]pep.Resource{nil, {{Name: "*"}}, {{Name: "*", Scopes: []string{"read"}}}} {
				got, err := c.ListGranted(t.Context(), res, pep.NoCache())
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
			got, err := c.ListGranted(t.Context(), []pep.Resource{{Name: "*", Scopes: []string{"no-such-scope"}}})
			require.NoError(t, err)
			assert.Empty(t, got)
		})
	}
}
