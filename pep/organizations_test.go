package pep_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

func TestOrganizations(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.setOrganization(aliceToken, map[string]any{
		"userId": "u-alice",
		"tenants": []any{
			map[string]any{"tenantId": "t1", "tenantName": "Acme EU", "departments": []any{
				map[string]any{"departmentId": "d1", "departmentName": "Sales"},
			}},
			map[string]any{"tenantId": "t2", "tenantName": "Acme US"},
		},
	})
	c := g.newClient(t)
	c.SetToken(aliceToken)

	oc, err := c.Organizations(t.Context())
	require.NoError(t, err)
	assert.Equal(t, pep.OrganizationContext{
		UserID: "u-alice",
		Tenants: []pep.Tenant{
			{ID: "t1", Name: "Acme EU", Departments: []pep.Department{{ID: "d1", Name: "Sales"}}},
			{ID: "t2", Name: "Acme US", Departments: []pep.Department{}},
		},
	}, oc)

	r := g.last()
	assert.Equal(t, "/realms/acme/authorization-decision-provider/get-organizations", r.Path)
	assert.Equal(t, "POST", r.Method)
	assert.Equal(t, "application/json", r.ContentType)
	assert.Equal(t, "Bearer "+aliceToken, r.Authorization)
	assert.Equal(t, testClient, r.ClientID)
}

func TestOrganizationsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		hook  gwHook
		check func(t *testing.T, err error)
	}{
		{
			name: "503 after retries",
			hook: statusHook(http.StatusServiceUnavailable),
			check: func(t *testing.T, err error) {
				require.ErrorIs(t, err, pep.ErrUnavailable)
				var re *pep.ResponseError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, http.StatusServiceUnavailable, re.StatusCode)
			},
		},
		{
			name: "403",
			hook: statusHook(http.StatusForbidden),
			check: func(t *testing.T, err error) {
				var re *pep.ResponseError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, http.StatusForbidden, re.StatusCode)
				assert.Equal(t, "Forbidden", re.ErrorName)
				assert.Equal(t, "injected", re.Message)
			},
		},
		{
			name: "unparseable",
			hook: bodyHook("nope"),
			check: func(t *testing.T, err error) {
				require.ErrorIs(t, err, pep.ErrMalformedResponse)
			},
		},
		{
			name: "status false",
			hook: bodyHook(`{"status":false,"organization":{"userId":"u","tenants":[]}}`),
			check: func(t *testing.T, err error) {
				require.ErrorIs(t, err, pep.ErrMalformedResponse)
			},
		},
		{
			name: "organization missing",
			hook: bodyHook(`{"status":true}`),
			check: func(t *testing.T, err error) {
				require.ErrorIs(t, err, pep.ErrMalformedResponse)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t)
			g.setHook(tt.hook)
			c := g.newClient(t, fastRetry)
			c.SetToken(aliceToken)
			oc, err := c.Organizations(t.Context())
			require.Error(t, err)
			assert.Equal(t, pep.OrganizationContext{}, oc)
			tt.check(t, err)
		})
	}
}
