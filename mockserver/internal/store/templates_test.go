package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

func TestDepartmentAttributesFollowPropertyTemplates(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	testkit.Must(r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: "all", Properties: []Property{
		{Key: "cost", Type: PropNumber, Required: true},
		{Key: "active", Type: PropBoolean},
		{Key: "since", Type: PropDate},
		{Key: "mail", Type: PropEmail},
		{Key: "site", Type: PropURL},
		{Key: "tier", Type: PropEnum, AllowedValues: []string{"gold"}},
		{Key: "note", Type: PropString},
	}}, t0))(t)

	ok := Attributes{"cost": {"12.5"}, "active": {"true"}, "since": {"2024-02-29"},
		"mail": {"a@b.test"}, "site": {"https://x.test/p"}, "tier": {"gold"}, "note": {"anything"}, "free": {"x"}}
	d := testkit.Must(r.CreateDepartment(o.ID, "", DeptSpec{Name: "ok", Attributes: ok}, t0))(t)

	tests := []struct {
		field string
		attrs Attributes
	}{
		{"attributes.cost", Attributes{"cost": {"twelve"}}},
		{"attributes.active", Attributes{"cost": {"1"}, "active": {"yes"}}},
		{"attributes.since", Attributes{"cost": {"1"}, "since": {"2024-02-30"}}},
		{"attributes.mail", Attributes{"cost": {"1"}, "mail": {"Alice <a@b.test>"}}},
		{"attributes.site", Attributes{"cost": {"1"}, "site": {"/relative"}}},
		{"attributes.tier", Attributes{"cost": {"1"}, "tier": {"bronze"}}},
		{"attributes.cost", Attributes{"note": {"the required cost is missing"}}},
	}
	for _, tc := range tests {
		_, err := r.CreateDepartment(o.ID, "", DeptSpec{Name: "bad", Attributes: tc.attrs}, t0)
		require.ErrorIs(t, err, ErrInvalid, tc.attrs)
		assert.Equal(t, tc.field, fieldOf(err))
		_, err = r.UpdateDepartment(o.ID, d.ID, DeptSpec{Name: "ok", Attributes: tc.attrs})
		require.ErrorIs(t, err, ErrInvalid, tc.attrs)
	}
	_, err := r.CreateDepartment(o.ID, "", DeptSpec{Name: "nan", Attributes: Attributes{"cost": {"NaN"}}}, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Len(t, r.Depts, 1)
	assert.Equal(t, ok, r.Depts[d.ID].Attributes, "failed updates change nothing")
}

func TestDepartmentTemplates(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	tmpl, err := r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "branch", Root: TemplateNode{
		Name: "Branch", Alias: "branch", RoleIDs: []string{"r-auditor"},
		Children: []TemplateNode{{Name: "Front", Alias: "front"}, {Name: "Back", RoleIDs: []string{"r-editor"}}},
	}}, t0)
	require.NoError(t, err)

	_, err = r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "x",
		Root: TemplateNode{Name: "R", RoleIDs: []string{"r-ghost"}}}, t0)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "x",
		Root: TemplateNode{Name: "R", Alias: "d", Children: []TemplateNode{{Name: "C", Alias: "d"}}}}, t0)
	assert.Equal(t, "root.children[0].alias", fieldOf(err))
	_, err = r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "x", Root: TemplateNode{}}, t0)
	assert.Equal(t, "root.name", fieldOf(err))

	top := testkit.Must(r.InstantiateTemplate(o.ID, "", tmpl.ID, t0))(t)
	assert.Equal(t, "Branch", top.Name)
	assert.Equal(t, []string{"r-auditor"}, top.TemplateRoleIDs)
	assert.Len(t, r.Depts, 3)
	var back *Department
	for _, d := range r.Depts {
		if d.Name == "Back" {
			back = d
		}
	}
	assert.Equal(t, []string{"r-editor"}, back.TemplateRoleIDs)
	assert.Equal(t, top.ID, back.ParentID)

	// A second instantiation clashes on the aliases and creates nothing.
	_, err = r.InstantiateTemplate(o.ID, "", tmpl.ID, t0)
	require.ErrorIs(t, err, ErrConflict)
	assert.Len(t, r.Depts, 3)
	// Under another department it clashes too: aliases are unique in the organization.
	_, err = r.InstantiateTemplate(o.ID, back.ID, tmpl.ID, t0)
	require.ErrorIs(t, err, ErrConflict)
	assert.Len(t, r.Depts, 3)

	// A property template added later applies at instantiation.
	deleteDepartment(t, r, o.ID, top.ID)
	_, err = r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: "p",
		Properties: []Property{{Key: "cost", Type: PropNumber, Required: true}}}, t0)
	require.NoError(t, err)
	_, err = r.InstantiateTemplate(o.ID, "", tmpl.ID, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, "root.attributes.cost", fieldOf(err))
	assert.Empty(t, r.Depts)

	_, err = r.InstantiateTemplate(o.ID, "", "ghost", t0)
	require.ErrorIs(t, err, ErrNotFound)
	list := testkit.Must(r.DepartmentTemplates(o.ID))(t)
	assert.Len(t, list, 1)
	requireConsistent(t, r)
}

// TestInstantiateNamesTheNodeAtFault: a department of a template that a
// property template added later refuses is named by its place in the
// template, however deep, and the template's other nodes do not change it.
func TestInstantiateNamesTheNodeAtFault(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	tmpl, err := r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "deep", Root: TemplateNode{
		Name: "R", Attributes: Attributes{"cost": {"1"}},
		Children: []TemplateNode{
			{Name: "A", Attributes: Attributes{"cost": {"2"}}, Children: []TemplateNode{{Name: "A0", Attributes: Attributes{"cost": {"3"}}}}},
			{Name: "B", Attributes: Attributes{"cost": {"4"}}, Children: []TemplateNode{
				{Name: "B0", Attributes: Attributes{"cost": {"5"}}},
				{Name: "B1", Attributes: Attributes{"cost": {"six"}}},
			}},
		},
	}}, t0)
	require.NoError(t, err)
	_, err = r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: "p",
		Properties: []Property{{Key: "cost", Type: PropNumber}}}, t0)
	require.NoError(t, err)
	_, err = r.InstantiateTemplate(o.ID, "", tmpl.ID, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, "root.children[1].children[1].attributes.cost", fieldOf(err))
	assert.Empty(t, r.Depts)
}

// TestPropertyKeyIndexFollowsTemplates: the organization's index of
// property keys, by which departments are checked in the time of their own
// attributes and templates in the time of their own properties, follows
// template creates, updates and deletes, with many templates.
func TestPropertyKeyIndexFollowsTemplates(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	other := mustOrg(t, r, "B", "b")
	var last *PropertyTemplate
	for i := range 200 {
		props := make([]Property, MaxProperties)
		for p := range props {
			props[p] = Property{Key: fmt.Sprintf("k%d_%d", i, p), Type: PropNumber}
		}
		var err error
		last, err = r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: fmt.Sprint("p", i), Properties: props}, t0)
		require.NoError(t, err)
	}
	ix := r.orgIndex(o.ID)
	require.Len(t, ix.props, 200*MaxProperties)
	_, err := r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: "dup", Properties: []Property{{Key: "k7_7", Type: PropString}}}, t0)
	require.ErrorIs(t, err, ErrConflict)
	testkit.Must(r.CreatePropertyTemplate(other.ID, PropertyTemplateSpec{Name: "dup", Properties: []Property{{Key: "k7_7", Type: PropString}}}, t0))(t, "keys are unique per organization only")

	_, err = r.CreateDepartment(o.ID, "", DeptSpec{Name: "x", Attributes: Attributes{"k5_5": {"many"}}}, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, "attributes.k5_5", fieldOf(err))
	mustDept(t, r, o.ID, "", DeptSpec{Name: "x", Attributes: Attributes{"k5_5": {"5"}, "free": {"any"}}})

	// The last template now declares one required key, then another.
	_, err = r.UpdatePropertyTemplate(o.ID, last.ID, PropertyTemplateSpec{Name: "last",
		Properties: []Property{{Key: "k199_0", Type: PropNumber}, {Key: "cost-center", Type: PropString, Required: true}}})
	require.NoError(t, err)
	require.Len(t, ix.props, 199*MaxProperties+2)
	_, err = r.CreateDepartment(o.ID, "", DeptSpec{Name: "y"}, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, "attributes.cost-center", fieldOf(err))
	assert.Contains(t, err.Error(), "property template last")
	_, err = r.UpdatePropertyTemplate(o.ID, last.ID, PropertyTemplateSpec{Name: "last",
		Properties: []Property{{Key: "k3_3", Type: PropString}}})
	require.ErrorIs(t, err, ErrConflict, "a key of another template")
	mustDept(t, r, o.ID, "", DeptSpec{Name: "y", Attributes: Attributes{"cost-center": {"cc"}, "k199_50": {"free now"}}})
	requireConsistent(t, r)

	require.NoError(t, r.DeletePropertyTemplate(o.ID, last.ID))
	require.Len(t, ix.props, 199*MaxProperties)
	require.Empty(t, ix.required)
	mustDept(t, r, o.ID, "", DeptSpec{Name: "z"})
	testkit.Must(r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: "again", Properties: []Property{{Key: "k199_0", Type: PropString}}}, t0))(t, "a deleted template's keys are free again")
	requireConsistent(t, r)
}
