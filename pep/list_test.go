package pep_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

func perms(pairs ...string) []pep.Permission {
	var out []pep.Permission
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, pep.Permission{Resource: pairs[i], Scope: pairs[i+1], Status: pep.Grant})
	}
	return out
}

// TestListGranted: in the shop fixture alice reads orders and invoices, bob
// reads and writes orders, and nobody deletes orders or pays invoices.
func TestListGranted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		user      string
		resources []pep.Resource
		want      []pep.Permission
		wantSent  []string
	}{
		{
			name:     "nil lists every permission of the client",
			user:     "bob",
			want:     perms("orders", "read", "orders", "write"),
			wantSent: []string{"*/*"},
		},
		{
			name:      "empty scopes list every scope of a resource",
			user:      "alice",
			resources: []pep.Resource{{Name: "invoices"}},
			want:      perms("invoices", "read"),
			wantSent:  []string{"invoices/*"},
		},
		{
			name:      "specific pairs keep request order",
			user:      "alice",
			resources: []pep.Resource{{Name: "invoices", Scopes: []string{"pay", "read"}}, {Name: "orders", Scopes: []string{"write", "read"}}},
			want:      perms("invoices", "read", "orders", "read"),
			wantSent:  []string{"invoices/pay", "invoices/read", "orders/write", "orders/read"},
		},
		{
			name:      "wildcard and specific pairs together, no duplicates",
			user:      "bob",
			resources: []pep.Resource{{Name: "orders", Scopes: []string{"write"}}, {Name: "orders"}},
			want:      perms("orders", "write", "orders", "read"),
			wantSent:  []string{"orders/write", "orders/*"},
		},
		{
			name:      "the wildcard resource lists every resource's grants",
			user:      "alice",
			resources: []pep.Resource{{Name: "*"}},
			want:      perms("orders", "read", "invoices", "read"),
			wantSent:  []string{"*/*"},
		},
		{
			name:      "the wildcard resource with a scope",
			user:      "bob",
			resources: []pep.Resource{{Name: "*", Scopes: []string{"write"}}},
			want:      perms("orders", "write"),
			wantSent:  []string{"*/write"},
		},
		{
			name:      "the wildcard resource with an unknown scope",
			user:      "alice",
			resources: []pep.Resource{{Name: "*", Scopes: []string{"no-such-scope"}}},
			want:      nil,
			wantSent:  []string{"*/no-such-scope"},
		},
		{
			name:      "nothing granted",
			user:      "alice",
			resources: []pep.Resource{{Name: "orders", Scopes: []string{"write", "delete"}}},
			want:      nil,
			wantSent:  []string{"orders/write", "orders/delete"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t)
			c.SetToken(g.token(t, tt.user))
			got, err := c.ListGranted(t.Context(), tt.resources)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantSent, g.last(t).pairs())
		})
	}
}

func TestListGrantedCachesWildcardAnswersAsPairs(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t)
	c.SetToken(g.token(t, "bob"))
	_, err := c.ListGranted(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, 1, g.count())

	for _, scope := range []string{"read", "write", "delete"} {
		d := checkedIn(t, c, t.Context(), "orders", scope)
		assert.True(t, d.Cached, scope)
	}
	assert.Equal(t, 1, g.count())

	// Specific pairs come from the cache; wildcards always ask.
	_, err = c.ListGranted(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read"}}})
	require.NoError(t, err)
	assert.Equal(t, 1, g.count())
	_, err = c.ListGranted(t.Context(), []pep.Resource{{Name: "orders"}})
	require.NoError(t, err)
	assert.Equal(t, 2, g.count())
}

func TestListGrantedFailures(t *testing.T) {
	t.Parallel()
	// The hook injects what the server cannot do on demand: fail one chunk,
	// answer with a pair missing or in conflict.
	t.Run("failed chunk: error with the confirmed grants", func(t *testing.T) {
		t.Parallel()
		g := startReference(t)
		g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
			body, _ := readBodyString(r)
			if strings.Contains(body, `"invoices"`) {
				writeError(w, http.StatusServiceUnavailable, "down")
				return true
			}
			return false
		})
		c := g.newClient(t, pep.WithBatchSize(1), noRetry)
		c.SetToken(g.token(t, "alice"))
		got, err := c.ListGranted(t.Context(), []pep.Resource{
			{Name: "orders", Scopes: []string{"read"}}, {Name: "invoices", Scopes: []string{"read"}},
		})
		require.ErrorIs(t, err, pep.ErrUnavailable)
		assert.Equal(t, perms("orders", "read"), got)
	})
	t.Run("missing pair is an error", func(t *testing.T) {
		t.Parallel()
		g := startReference(t)
		g.setHook(bodyHook(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`))
		c := g.newClient(t)
		c.SetToken(g.token(t, "alice"))
		got, err := c.ListGranted(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
		require.ErrorIs(t, err, pep.ErrMalformedResponse)
		assert.Equal(t, perms("orders", "read"), got)
	})
	t.Run("conflicting wildcard pair is not listed", func(t *testing.T) {
		t.Parallel()
		g := startReference(t)
		g.setHook(bodyHook(`{"status":"GRANT","permissions":[` +
			`{"resource":"orders","scope":"read","status":"GRANT"},` +
			`{"resource":"orders","scope":"write","status":"GRANT"},` +
			`{"resource":"orders","scope":"write","status":"DENY"}]}`))
		c := g.newClient(t)
		c.SetToken(g.token(t, "alice"))
		got, err := c.ListGranted(t.Context(), []pep.Resource{{Name: "orders"}})
		require.ErrorIs(t, err, pep.ErrMalformedResponse)
		assert.Equal(t, perms("orders", "read"), got)
		assert.Equal(t, 1, c.Stats().CacheEntries, "only the clean pair is cached")
	})
	t.Run("empty resource name", func(t *testing.T) {
		t.Parallel()
		g, c := startWithAlice(t)
		_, err := c.ListGranted(t.Context(), []pep.Resource{{Scopes: []string{"read"}}})
		require.EqualError(t, err, "pep: invalid argument: resource 0 has no name")
		require.ErrorIs(t, err, pep.ErrInvalidArgument)
		assert.Equal(t, 0, g.count())
	})
}
