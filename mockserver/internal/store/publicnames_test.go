package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPublicNameKnowsWhatTheStorePublishes: an error may repeat a caller's
// value only when the store knows it as a public name (a-fix13c F1).
// Every kind of name is known, in whichever realm holds it; a secret of
// the same shape (a client's secret, a user's password, a department's
// name, which is no identifier) is not, nor a department's alias (not
// looked up: one index per organization).
func TestPublicNameKnowsWhatTheStorePublishes(t *testing.T) {
	t.Parallel()
	s := New(nil)
	r := testRealm(t) // users alice, bob; roles viewer, editor, auditor
	o := mustOrg(t, r, "Acme Europe", "acme-eu")
	mustDept(t, r, o.ID, "", DeptSpec{Name: "Sales Team", Alias: "sales"})
	_, err := r.AddGroup("platform", nil, nil)
	require.NoError(t, err)
	_, err = r.AddClient(Client{ClientID: "shop-api", Secret: "s3cr3t-of-shop",
		Resources: []ClientResource{{Name: "orders", Scopes: []string{"read", "approve"}}}}, nil)
	require.NoError(t, err)
	_, err = r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: "costs", Properties: []Property{{Key: "cost", Type: "NUMBER"}}}, t0)
	require.NoError(t, err)
	r.SigningKey, r.KeyID = keyedRealm(t, "acme").SigningKey, "kid-acme"
	other := keyedRealm(t, "globex")
	other.addUser(&User{ID: "u-gina", Username: "gina", Password: "Xq7_vLm2-RtZ9pWk4sNb8cJd", RoleIDs: Set{}, GroupIDs: Set{}})
	require.NoError(t, s.Install(r, other))

	// To every caller, only the realms' names (each answers its discovery
	// document to anyone); a realm's own names only to its callers.
	for _, v := range []string{"acme", "globex"} {
		assert.True(t, s.PublicName(v), "%q is published", v)
	}
	for _, v := range []string{"", "alice", "gina", "shop-api", "acme-eu", "s3cr3t-of-shop", "Xq7_vLm2-RtZ9pWk4sNb8cJd", "no-such-client", "ACME"} {
		assert.False(t, s.PublicName(v), "%q is not published to every caller", v)
	}
	for _, v := range []string{"alice", "viewer", "platform", "shop-api", "orders", "approve", "acme-eu", "Acme Europe", "costs", "cost"} {
		assert.True(t, r.PublicName(v), "%q is published to the realm's callers", v)
	}
	for _, v := range []string{"gina", "s3cr3t-of-shop", "Sales Team", "sales", "no-such-client"} {
		assert.False(t, r.PublicName(v), "%q is not published by the realm", v)
	}
}
