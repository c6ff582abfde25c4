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

// TestHoldsIDKnowsTheIDsTheRealmHolds (a-fix14 F2): an error repeats an id
// because the caller's realm holds its object, not because it has an id's
// form: a UUID the store never assigned (uuidgen's admin secret), or whose
// object is gone, is not held; nor is an id another realm holds (a-fix14d:
// a lookup in every realm was a cross-tenant existence check), nor an id of
// a realm being written (the error's writer may hold that lock: it does
// not wait, it describes).
func TestHoldsIDKnowsTheIDsTheRealmHolds(t *testing.T) {
	t.Parallel()
	s := New(nil)
	r := keyedRealm(t, "acme")
	o := mustOrg(t, r, "Acme Europe", "acme-eu")
	d := mustDept(t, r, o.ID, "", DeptSpec{Name: "Sales Team", Alias: "sales"})
	role, err := r.AddRole("viewer", "", nil)
	require.NoError(t, err)
	group, err := r.AddGroup("platform", nil, nil)
	require.NoError(t, err)
	client, err := r.AddClient(Client{ClientID: "shop-api", Secret: "3f1c6a52-9b7e-4d2a-8c4f-1e2d3c4b5a69"}, nil)
	require.NoError(t, err)
	pt, err := r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: "costs", Properties: []Property{{Key: "cost", Type: "NUMBER"}}}, t0)
	require.NoError(t, err)
	other := keyedRealm(t, "globex")
	theirs := mustOrg(t, other, "Globex", "globex")
	require.NoError(t, s.Install(r, other))

	for what, id := range map[string]string{"organization": o.ID, "department": d.ID, "role": role.ID, "group": group.ID, "client": client.ID, "property template": pt.ID} {
		assert.True(t, r.TryHoldsID(id), "%s %s is held by its realm", what, id)
		assert.False(t, other.TryHoldsID(id), "%s %s is not another realm's", what, id)
	}
	for _, v := range []string{"", client.Secret, "0c9d6a8e-3b1f-4d2a-9e5c-7f8a1b2c3d4e", "acme", "shop-api", theirs.ID} {
		assert.False(t, r.TryHoldsID(v), "%q is not an id the realm holds", v)
	}
	assert.True(t, other.TryHoldsID(theirs.ID))
	// A realm being written answers no at once rather than wait.
	require.NoError(t, s.Write("acme", func(*Realm) error {
		assert.False(t, r.TryHoldsID(o.ID), "a realm being written is not waited for")
		return nil
	}))
	assert.True(t, r.TryHoldsID(o.ID))
	// An object deleted is not held.
	require.NoError(t, s.Write("acme", func(r *Realm) error { return r.DeleteOrganization(o.ID) }))
	assert.False(t, r.TryHoldsID(o.ID), "a deleted organization's id is not held")
	assert.False(t, r.TryHoldsID(d.ID), "a deleted organization's department is not held")
}
