package pep_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestCheckRefusesCaseVariantMembers: a gateway answer whose members
// another reader could read otherwise (a name in another case only, two
// names differing in case, a case-confusable letter, a duplicate inside a
// member the client skips) is refused whole: the call fails closed.
func TestCheckRefusesCaseVariantMembers(t *testing.T) {
	t.Parallel()
	const asked = `{"resource":"orders","scope":"read","status":"GRANT"}`
	for _, tt := range []struct{ name, body string }{
		{"a status beside a non-ASCII name (long s)", `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","ſtatus":"DENY"}]}`},
		{"a scope named in another case only", `{"status":"GRANT","permissions":[{"resource":"orders","Scope":"read","status":"GRANT"}]}`},
		{"two unread members differing only in case", `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","reason":"role viewer","Reason":"none"}]}`},
		{"a member twice inside an unread member", `{"status":"GRANT","permissions":[` + asked + `],"explain":{"orders":"DENY","orders":"GRANT"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			g.setHook(bodyHook(tt.body))
			c := g.newClient(t)
			c.SetToken(g.token(t, "alice"))
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			assert.False(t, d.Allowed())
			require.ErrorIs(t, d.Cause, pep.ErrMalformedResponse)
			assert.Equal(t, 1, g.count())
		})
	}
}
