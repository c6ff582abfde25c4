package mockserver

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// auditBound is the bound of each part of a tenant's audit log in these
// tests (100,000 in service): a flood of auditFlood calls overflows a part
// through the same code as 101,024 calls would overflow a real one.
const (
	auditBound = 1024 + 7
	auditFlood = auditBound + 1024
)

// flood sends n calls as token straight to the server's handler, each
// body made by body(i), and requires each to be answered want.
func (a *orgAPI) flood(n int, token, method, path string, body func(i int) string, want int) {
	a.t.Helper()
	for i := range n {
		req := httptest.NewRequest(method, a.url+path, strings.NewReader(body(i)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		a.s.ServeHTTP(rec, req)
		require.Equal(a.t, want, rec.Code, "call %d: %s", i, rec.Body)
	}
}

// userID returns the id of the user name of realm, a token's subject.
func (a *orgAPI) userID(realm, name string) string {
	a.t.Helper()
	var id string
	require.NoError(a.t, a.s.store.Read(realm, func(rm *store.Realm) error {
		id = rm.UserByName[name]
		return nil
	}))
	require.NotEmpty(a.t, id)
	return id
}

// TestAuditRefusedCallsKeepTheAdminsTrail: a caller without realm
// management, whose every call to the organization API is refused (403)
// and recorded, cannot push the realm admin's accepted actions out of the
// tenant's audit log, however many calls it makes.
func TestAuditRefusedCallsKeepTheAdminsTrail(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	a.s.store.LimitAudit(auditBound)
	created := a.do(http.MethodPost, "", map[string]any{"name": "Evidence", "alias": "evidence"})
	require.Equal(t, http.StatusCreated, created.Status, string(created.Body))
	alice := a.userID("acme", "alice")
	require.Len(t, auditEntries(a.s, store.AuditFilter{ActorID: alice}), 1)

	a.flood(auditFlood, a.token("acme", "bob"), http.MethodPost, "/admin/realms/acme/organizations",
		func(int) string { return `{}` }, http.StatusForbidden)

	entries := auditEntries(a.s, store.AuditFilter{ActorID: alice})
	require.Len(t, entries, 1, "bob's refused calls pushed out alice's accepted action")
	require.Equal(t, "organization.create", entries[0].Action)
	require.Equal(t, store.OutcomeSuccess, entries[0].Outcome)
	refused := auditEntries(a.s, store.AuditFilter{ActorID: a.userID("acme", "bob")})
	require.NotEmpty(t, refused, "bob's refusals are on record")
	require.LessOrEqual(t, len(refused), auditBound, "and bounded")
}

// TestAuditTenantCannotEraseThePlatformsRecordOfItsProvisioning: the
// platform's record that it provisioned a tenant is found in that tenant's
// log, but the tenant's admin cannot push it out with its calls.
func TestAuditTenantCannotEraseThePlatformsRecordOfItsProvisioning(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	a.s.store.LimitAudit(auditBound)
	platform := a.token("master", "service-account-platform-admin")
	res := a.doAs(platform, http.MethodPost, a.url+"/admin/tenants", map[string]any{"name": "initech", "plan": "free", "adminEmail": "root@initech.test"})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	var out struct {
		Result struct {
			TenantID string `json:"tenantId"`
		} `json:"result"`
	}
	res.into(t, &out)
	tenant := out.Result.TenantID
	provisioned := store.AuditFilter{TenantID: tenant, Action: "tenant.create"}
	require.Len(t, auditEntries(a.s, provisioned), 1)

	// Refused calls are recorded as refusals on the same path as
	// TestAuditRefusedCallsKeepTheAdminsTrail's (recordAudit, by status),
	// and never in the platform's part: accepted calls are the flood that
	// could reach it.
	root := a.token("initech", "root@initech.test")
	a.flood(auditFlood, root, http.MethodPost, "/admin/realms/initech/organizations",
		func(i int) string {
			return `{"name":"Org ` + strconv.Itoa(i) + `","alias":"org-` + strconv.Itoa(i) + `"}`
		}, http.StatusCreated)

	entries := auditEntries(a.s, provisioned)
	require.Len(t, entries, 1, "the tenant's admin pushed out the platform's record of its provisioning")
	require.Equal(t, a.userID("master", "service-account-platform-admin"), entries[0].ActorID)
	_, total := a.s.store.AuditPage(store.AuditFilter{TenantID: tenant}, 0, 1)
	require.LessOrEqual(t, total, 2*auditBound+1, "the tenant's own parts are bounded")
}
