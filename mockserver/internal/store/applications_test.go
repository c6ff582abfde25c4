package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApplicationCatalog(t *testing.T) {
	r := testRealm(t)
	app, err := r.RegisterApplication(AppSpec{ClientID: "orders-api", Tags: []string{"core"}}, t0)
	require.NoError(t, err)
	assert.Equal(t, "orders-api", app.Name, "name defaults to the clientId")
	assert.Equal(t, AppActive, app.Status)
	assert.True(t, app.Assignable)

	_, err = r.RegisterApplication(AppSpec{ClientID: "orders-api"}, t0)
	require.ErrorIs(t, err, ErrConflict)
	_, err = r.RegisterApplication(AppSpec{ClientID: "ghost"}, t0)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = r.RegisterApplication(AppSpec{}, t0)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = r.RegisterApplication(AppSpec{ClientID: "billing-api", Status: "PAUSED"}, t0)
	assert.Equal(t, "status", fieldOf(err))

	no := false
	got, err := r.UpdateApplication(app.ID, AppSpec{ClientID: "ignored", Name: "Orders", Status: AppDisabled, Assignable: &no})
	require.NoError(t, err)
	assert.Equal(t, "orders-api", got.ClientID)
	assert.Equal(t, AppDisabled, got.Status)
	assert.False(t, got.Assignable)
	assert.Empty(t, got.Tags, "an omitted field takes its default")

	require.NoError(t, r.DeleteApplication(app.ID))
	require.ErrorIs(t, r.DeleteApplication(app.ID), ErrNotFound)
	assert.Contains(t, r.Clients, "c-orders-api", "the realm client stays")
	requireConsistent(t, r)
}

func TestOrganizationApplications(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	orders, err := r.RegisterApplication(AppSpec{ClientID: "orders-api", Name: "Orders",
		Description: "Takes ORDERS", Tags: []string{"core", "sales"}}, t0)
	require.NoError(t, err)
	no := false
	_, err = r.RegisterApplication(AppSpec{ClientID: "billing-api", Name: "Billing", Assignable: &no}, t0.Add(time.Hour))
	require.NoError(t, err)

	_, created, err := r.AssignApplication(o.ID, "orders-api")
	require.NoError(t, err)
	assert.True(t, created)
	_, created, err = r.AssignApplication(o.ID, "orders-api")
	require.NoError(t, err)
	assert.False(t, created)
	_, _, err = r.AssignApplication(o.ID, "billing-api")
	require.ErrorIs(t, err, ErrInvalid, "not assignable")
	_, _, err = r.AssignApplication(o.ID, "ghost")
	require.ErrorIs(t, err, ErrNotFound)

	got, err := r.OrgApplication(o.ID, "orders-api")
	require.NoError(t, err)
	assert.Same(t, orders, got)
	_, err = r.OrgApplication(o.ID, "billing-api")
	require.ErrorIs(t, err, ErrNotFound, "in the catalog but not assigned")

	for _, q := range []AppQuery{{Search: "orders"}, {Search: "TAKES"}, {Tag: "sales"}, {SortBy: SortByCreatedAt, Desc: true}} {
		list, err := r.OrgAppList(o.ID, q)
		require.NoError(t, err)
		assert.Len(t, list, 1, "%+v", q)
	}
	list, err := r.OrgAppList(o.ID, AppQuery{Tag: "sal"})
	require.NoError(t, err)
	assert.Empty(t, list, "tags match exactly")
	_, err = r.OrgAppList(o.ID, AppQuery{SortBy: "size"})
	assert.Equal(t, "sortBy", fieldOf(err))

	all, err := r.CatalogApplications(AppQuery{SortBy: SortByCreatedAt, Desc: true})
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, "billing-api", all[0].ClientID)
	all, err = r.CatalogApplications(AppQuery{SortBy: SortByClientID})
	require.NoError(t, err)
	assert.Equal(t, "billing-api", all[0].ClientID)

	// Deleting from the catalog unassigns everywhere.
	require.NoError(t, r.DeleteApplication(orders.ID))
	assert.NotContains(t, r.OrgApps, o.ID)
	requireConsistent(t, r)

	orders, err = r.RegisterApplication(AppSpec{ClientID: "orders-api"}, t0)
	require.NoError(t, err)
	_, _, err = r.AssignApplication(o.ID, "orders-api")
	require.NoError(t, err)
	_, err = r.UnassignApplication(o.ID, "orders-api")
	require.NoError(t, err)
	_, err = r.UnassignApplication(o.ID, "orders-api")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, r.Apps, orders.ID, "unassigning keeps the catalog entry")
	requireConsistent(t, r)
}
