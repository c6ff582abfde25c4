package mockserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// TestPolicyEvaluateClientByID: the route takes the client's internal id
// as Keycloak's does, as well as its clientId.
func TestPolicyEvaluateClientByID(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	var id string
	a.realm(func(rm *store.Realm) {
		c, ok := rm.ClientNamed("orders-api")
		require.True(t, ok)
		id = c.ID
	})
	require.NotEqual(t, "orders-api", id)
	for _, client := range []string{id, "orders-api"} {
		r := a.do(http.MethodPost, a.url+"/admin/realms/acme/clients/"+client+"/authz/resource-server/policy/evaluate",
			map[string]any{"username": "alice", "resources": []map[string]any{{"name": "*"}}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		var out struct {
			ClientID string `json:"clientId"`
			Status   string `json:"status"`
		}
		r.into(t, &out)
		require.Equal(t, "orders-api", out.ClientID)
		require.Equal(t, "ERROR", out.Status, "orders-api defines no resource: * is the ERROR pair (*, \"\")")
	}
}
