package mockserver_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// adminFixture adds to the decision world a master realm user without
// platform-admin.
func adminFixture() mockserver.Fixture {
	f := decisionFixture()
	f.Realms = append(f.Realms, mockserver.FixtureRealm{Name: "master", Users: []mockserver.FixtureUser{{Username: "mike"}}})
	return f
}

// bearerCall sends method path with token as Bearer (none when empty) and
// body as JSON (no Content-Type on a call without a body but a POST).
func bearerCall(t *testing.T, srv *mockservertest.Server, method, path, token, body string) servertest.Result {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	ct := ""
	if body != "" || method == http.MethodPost {
		ct = "application/json"
	}
	return servertest.Send(t, srv, method, path, ct, strings.NewReader(body), h)
}

func TestProvisionTenantThenAdminLogsIn(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(adminFixture()))
	admin := srv.AdminToken()

	res := bearerCall(t, srv, http.MethodPost, "/admin/tenants", admin, `{"name":"initech","plan":"standard","adminEmail":"boss@initech.test"}`)
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	tenant := res.JSON(t)["result"].(map[string]any)
	require.Equal(t, "initech", tenant["name"])
	require.Equal(t, "standard", tenant["plan"])
	require.Equal(t, "boss@initech.test", tenant["adminEmail"])
	require.Equal(t, "ACTIVE", tenant["status"])
	testkit.Must(time.Parse(time.RFC3339, tenant["createdAt"].(string)))(t)
	id := tenant["tenantId"].(string)
	require.Equal(t, srv.URL+"/admin/tenants/"+id, res.Header.Get("Location"))
	password := tenant["initialPassword"].(string)
	require.NotEmpty(t, password)

	login := servertest.TokenRequest(t, srv, "initech", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"boss@initech.test"}, "password": {password}}, nil)
	require.Equal(t, http.StatusOK, login.Status, string(login.Body))
	tok := login.JSON(t)["access_token"].(string)
	list := servertest.Send(t, srv, http.MethodGet, "/admin/realms/initech/organizations", "", nil, http.Header{"Authorization": {"Bearer " + tok}})
	require.Equal(t, http.StatusOK, list.Status, "the tenant admin holds realm-admin: %s", list.Body)
	disc := servertest.Send(t, srv, http.MethodGet, "/realms/initech/.well-known/openid-configuration", "", nil, nil)
	require.Equal(t, http.StatusOK, disc.Status)

	dup := bearerCall(t, srv, http.MethodPost, "/admin/tenants", admin, `{"name":"initech","plan":"free","adminEmail":"x@initech.test"}`)
	require.Equal(t, http.StatusConflict, dup.Status)
	dup = bearerCall(t, srv, http.MethodPost, "/admin/tenants", admin, `{"name":"acme","plan":"free","adminEmail":"x@acme.test"}`)
	require.Equal(t, http.StatusConflict, dup.Status, "a fixture realm's name is taken too")

	// Decommissioning refuses every token of the realm from then on.
	res = bearerCall(t, srv, http.MethodDelete, "/admin/tenants/"+id, admin, "")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	gone := res.JSON(t)["result"].(map[string]any)
	require.Equal(t, id, gone["tenantId"])
	require.Equal(t, "DECOMMISSIONED", gone["status"])
	testkit.Must(time.Parse(time.RFC3339, gone["decommissionedAt"].(string)))(t)

	list = servertest.Send(t, srv, http.MethodGet, "/admin/realms/initech/organizations", "", nil, http.Header{"Authorization": {"Bearer " + tok}})
	require.Equal(t, http.StatusUnauthorized, list.Status)
	require.Contains(t, list.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	dec := bearerCall(t, srv, http.MethodPost, "/realms/initech/authorization-decision-provider/authorize", tok, `{"clientId":"admin-cli","resources":[{"name":"x"}]}`)
	require.Equal(t, http.StatusUnauthorized, dec.Status)
	login = servertest.TokenRequest(t, srv, "initech", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"boss@initech.test"}, "password": {password}}, nil)
	require.Equal(t, http.StatusNotFound, login.Status)

	res = bearerCall(t, srv, http.MethodDelete, "/admin/tenants/"+id, admin, "")
	require.Equal(t, http.StatusNotFound, res.Status, "a repeat is 404")
}

func TestProvisionTenantValidation(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(adminFixture()))
	admin := srv.AdminToken()
	cases := []struct{ name, body, field string }{
		{"name too short", `{"name":"a","plan":"free","adminEmail":"a@b.test"}`, "name"},
		{"name upper case", `{"name":"Initech","plan":"free","adminEmail":"a@b.test"}`, "name"},
		{"name leading dash", `{"name":"-initech","plan":"free","adminEmail":"a@b.test"}`, "name"},
		{"plan unknown", `{"name":"initech","plan":"gold","adminEmail":"a@b.test"}`, "plan"},
		{"email missing", `{"name":"initech","plan":"free"}`, "adminEmail"},
		{"email malformed", `{"name":"initech","plan":"free","adminEmail":"not-an-email"}`, "adminEmail"},
		{"email with a display name", `{"name":"initech","plan":"free","adminEmail":"Boss <boss@initech.test>"}`, "adminEmail"},
		{"wrong type", `{"name":1,"plan":"free","adminEmail":"a@b.test"}`, "name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := bearerCall(t, srv, http.MethodPost, "/admin/tenants", admin, tc.body)
			require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
			details := res.JSON(t)["details"].([]any)
			require.Equal(t, tc.field, details[0].(map[string]any)["field"])
		})
	}
}

func TestPlatformAdminOnly(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(adminFixture()))
	body := `{"name":"initech","plan":"free","adminEmail":"a@b.test"}`
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"realm admin of another realm", srv.Token("acme", "admin"), http.StatusUnauthorized},
		{"master user without platform-admin", srv.Token("master", "mike"), http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, call := range []struct{ method, path, body string }{
				{http.MethodPost, "/admin/tenants", body}, {http.MethodDelete, "/admin/tenants/x", ""},
				{http.MethodGet, "/admin/health", ""}, {http.MethodPut, "/admin/config", `{}`},
				{http.MethodGet, "/admin/config", ""}, {http.MethodGet, "/admin/audit", ""},
			} {
				res := bearerCall(t, srv, call.method, call.path, tc.token, call.body)
				require.Equal(t, tc.want, res.Status, "%s %s", call.method, call.path)
			}
		})
	}
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(adminFixture()))
	admin := srv.AdminToken()
	adminSub := subjectOf(t, admin)
	realmAdmin := srv.Token("acme", "admin")
	alice := srv.Token("acme", "alice")
	start := time.Now().UTC().Add(-time.Second)

	res := bearerCall(t, srv, http.MethodPost, "/admin/tenants", admin, `{"name":"initech","plan":"free","adminEmail":"a@initech.test"}`)
	require.Equal(t, http.StatusCreated, res.Status)
	tenantID := res.JSON(t)["result"].(map[string]any)["tenantId"].(string)
	require.Equal(t, http.StatusConflict, bearerCall(t, srv, http.MethodPost, "/admin/tenants", admin, `{"name":"initech","plan":"free","adminEmail":"a@initech.test"}`).Status)
	require.Equal(t, http.StatusOK, bearerCall(t, srv, http.MethodPut, "/admin/config", admin, `{"tokenLifetimeSeconds":600}`).Status)
	orgRes := servertest.Send(t, srv, http.MethodPost, "/admin/realms/acme/organizations", "application/json",
		strings.NewReader(`{"name":"Acme APAC","alias":"apac"}`), http.Header{"Authorization": {"Bearer " + realmAdmin}})
	require.Equal(t, http.StatusCreated, orgRes.Status, string(orgRes.Body))
	orgID := orgRes.JSON(t)["result"].(map[string]any)["id"].(string)
	denied := servertest.Send(t, srv, http.MethodPost, "/admin/realms/acme/organizations", "application/json",
		strings.NewReader(`{"name":"Nope","alias":"nope"}`), http.Header{"Authorization": {"Bearer " + alice}})
	require.Equal(t, http.StatusForbidden, denied.Status)
	require.Equal(t, http.StatusOK, bearerCall(t, srv, http.MethodDelete, "/admin/tenants/"+tenantID, admin, "").Status)

	type row struct{ actor, action, tenant, typ, resID, outcome string }
	list := func(query string) []row {
		t.Helper()
		res := bearerCall(t, srv, http.MethodGet, "/admin/audit"+query, admin, "")
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		var rows []row
		for _, e := range res.JSON(t)["results"].([]any) {
			m := e.(map[string]any)
			require.NotEmpty(t, m["id"])
			testkit.Must(time.Parse(time.RFC3339, m["timestamp"].(string)))(t)
			rows = append(rows, row{m["actorId"].(string), m["action"].(string), m["tenantId"].(string),
				m["resourceType"].(string), m["resourceId"].(string), m["outcome"].(string)})
		}
		return rows
	}
	all := []row{ // newest first
		{adminSub, "tenant.decommission", tenantID, "tenant", tenantID, "SUCCESS"},
		{subjectOf(t, alice), "organization.create", "acme", "organization", "", "FAILURE"},
		{subjectOf(t, realmAdmin), "organization.create", "acme", "organization", orgID, "SUCCESS"},
		{adminSub, "config.update", "master", "config", "config", "SUCCESS"},
		{adminSub, "tenant.create", "master", "tenant", "", "FAILURE"},
		{adminSub, "tenant.create", tenantID, "tenant", tenantID, "SUCCESS"},
	}
	require.Equal(t, all, list(""))
	require.Equal(t, all[1:2], list("?actorId="+subjectOf(t, alice)))
	require.Equal(t, []row{all[0], all[5]}, list("?tenantId="+tenantID))
	require.Equal(t, []row{all[4], all[5]}, list("?action=tenant.create"))
	require.Equal(t, all[:2], list("?count=2"))
	require.Equal(t, all[2:4], list("?offset=2&count=2"))
	require.Equal(t, all, list("?from="+url.QueryEscape(start.Format(time.RFC3339Nano))))
	require.Empty(t, list("?to="+url.QueryEscape(start.Format(time.RFC3339))))
	require.Empty(t, list("?from="+url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))))

	res = bearerCall(t, srv, http.MethodGet, "/admin/audit?from=yesterday", admin, "")
	require.Equal(t, http.StatusBadRequest, res.Status)
	res = bearerCall(t, srv, http.MethodGet, "/admin/audit?count=0", admin, "")
	require.Equal(t, http.StatusBadRequest, res.Status)
}

func TestConfig(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(adminFixture()))
	admin := srv.AdminToken()
	res := bearerCall(t, srv, http.MethodGet, "/admin/config", admin, "")
	require.Equal(t, http.StatusOK, res.Status)
	require.JSONEq(t, `{"result":{"tokenLifetimeSeconds":300,"maxPageSize":100,"dpopNonceRequired":false,"decisionLatencyMs":0,"decisionFailureRate":0}}`, string(res.Body))

	res = bearerCall(t, srv, http.MethodPut, "/admin/config", admin, `{"tokenLifetimeSeconds":60,"decisionLatencyMs":1,"decisionFailureRate":0.25}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.JSONEq(t, `{"result":{"tokenLifetimeSeconds":60,"maxPageSize":100,"dpopNonceRequired":false,"decisionLatencyMs":1,"decisionFailureRate":0.25}}`, string(res.Body))
	tok := servertest.TokenRequest(t, srv, "acme", url.Values{"grant_type": {"client_credentials"}, "client_id": {"orders-api"}, "client_secret": {"orders-secret"}}, nil)
	require.EqualValues(t, 60, tok.JSON(t)["expires_in"])

	for _, tc := range []struct{ name, body, field string }{
		{"unknown key", `{"tokenLifetime":60}`, "(a name of 13 bytes, not repeated)"},
		{"lifetime zero", `{"tokenLifetimeSeconds":0}`, "tokenLifetimeSeconds"},
		{"lifetime not a number", `{"tokenLifetimeSeconds":"60"}`, "tokenLifetimeSeconds"},
		{"page size too big", `{"maxPageSize":101}`, "maxPageSize"},
		{"negative latency", `{"decisionLatencyMs":-1}`, "decisionLatencyMs"},
		{"rate above one", `{"decisionFailureRate":1.5}`, "decisionFailureRate"},
		{"nonce not a boolean", `{"dpopNonceRequired":"yes"}`, "dpopNonceRequired"},
		{"null value", `{"decisionFailureRate":null}`, "decisionFailureRate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := bearerCall(t, srv, http.MethodPut, "/admin/config", admin, tc.body)
			require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
			require.Equal(t, tc.field, res.JSON(t)["details"].([]any)[0].(map[string]any)["field"])
		})
	}
	for _, body := range []string{`[]`, `null`, `{`} {
		res := bearerCall(t, srv, http.MethodPut, "/admin/config", admin, body)
		require.Equal(t, http.StatusBadRequest, res.Status, body)
	}
	res = bearerCall(t, srv, http.MethodGet, "/admin/config", admin, "")
	require.Contains(t, string(res.Body), `"decisionFailureRate":0.25`, "a refused PUT changes nothing")

	// PATCH changes the keys it names and keeps the others; PUT replaces
	// the whole configuration; a refused PATCH changes nothing (the rows
	// of TestPatchConfig).
	res = bearerCall(t, srv, http.MethodPut, "/admin/config", admin, `{"tokenLifetimeSeconds":60,"decisionLatencyMs":1}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	res = bearerCall(t, srv, http.MethodPatch, "/admin/config", admin, `{"maxPageSize":10}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.JSONEq(t, `{"result":{"tokenLifetimeSeconds":60,"maxPageSize":10,"dpopNonceRequired":false,"decisionLatencyMs":1,"decisionFailureRate":0}}`, string(res.Body))
	res = bearerCall(t, srv, http.MethodPatch, "/admin/config", admin, `{}`)
	require.Equal(t, http.StatusOK, res.Status)
	require.Contains(t, string(res.Body), `"maxPageSize":10`, "an empty PATCH changes nothing")

	for _, body := range []string{`{"maxPageSize":50,"bogus":1}`, `{"maxPageSize":0}`, `{"maxPageSize":20,"maxPageSize":30}`, `[]`, `null`} {
		res := bearerCall(t, srv, http.MethodPatch, "/admin/config", admin, body)
		require.Equal(t, http.StatusBadRequest, res.Status, body)
	}
	res = bearerCall(t, srv, http.MethodGet, "/admin/config", admin, "")
	require.JSONEq(t, `{"result":{"tokenLifetimeSeconds":60,"maxPageSize":10,"dpopNonceRequired":false,"decisionLatencyMs":1,"decisionFailureRate":0}}`, string(res.Body),
		"a refused PATCH changes nothing")

	res = bearerCall(t, srv, http.MethodPut, "/admin/config", admin, `{"maxPageSize":20}`)
	require.JSONEq(t, `{"result":{"tokenLifetimeSeconds":300,"maxPageSize":20,"dpopNonceRequired":false,"decisionLatencyMs":0,"decisionFailureRate":0}}`, string(res.Body),
		"PUT replaces: omitted keys take their defaults")
	res = bearerCall(t, srv, http.MethodPatch, "/admin/config", srv.Token("acme", "alice"), `{"maxPageSize":5}`)
	require.Equal(t, http.StatusUnauthorized, res.Status)
}

func TestFaultInjection(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(adminFixture()))
	admin := srv.AdminToken()
	alice := srv.Token("acme", "alice")
	health := func() (int, string) {
		res := bearerCall(t, srv, http.MethodGet, "/admin/health", admin, "")
		m := res.JSON(t)
		testkit.Must(time.Parse(time.RFC3339, m["checkedAt"].(string)))(t)
		require.NotEmpty(t, m["components"])
		return res.Status, m["status"].(string)
	}
	code, status := health()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "UP", status)

	require.Equal(t, http.StatusOK, bearerCall(t, srv, http.MethodPut, "/admin/config", admin, `{"decisionFailureRate":1}`).Status)
	for range 20 {
		res := bearerCall(t, srv, http.MethodPost, authorizePath, alice, `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{}}`)
		require.Equal(t, http.StatusServiceUnavailable, res.Status)
		require.Equal(t, "Service Unavailable", res.JSON(t)["error"])
		res = bearerCall(t, srv, http.MethodPost, "/realms/acme/authorization-decision-provider/get-organizations", alice, `{"clientId":"orders-api"}`)
		require.Equal(t, http.StatusServiceUnavailable, res.Status)
	}
	code, status = health()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "DOWN", status)

	require.Equal(t, http.StatusOK, bearerCall(t, srv, http.MethodPut, "/admin/config", admin, `{"decisionLatencyMs":60000}`).Status)
	code, status = health()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "DEGRADED", status)
	// The injected delay gives way to the caller's cancellation.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+authorizePath,
		strings.NewReader(`{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Content-Type", "application/json")
	began := time.Now()
	_, err = srv.Client().Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(began), 10*time.Second)

	require.Equal(t, http.StatusOK, bearerCall(t, srv, http.MethodPut, "/admin/config", admin, `{}`).Status)
	res := bearerCall(t, srv, http.MethodPost, authorizePath, alice, `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
	require.Equal(t, http.StatusOK, res.Status)
}
