package mockserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// es256Tokens makes a test's server sign access tokens ES256 rather than
// RS256, the default: see es256Tokens in tokenalg_test.go for why and which
// tests keep the default.
var es256Tokens = mockserver.WithAccessTokenAlgorithm("ES256")

// decisionFixture is the world whose decisions are worked out by hand in
// the tests below (DecisionFixture, fixtures_export_test.go).
var decisionFixture = mockserver.DecisionFixture

const authorizePath = "/realms/acme/authorization-decision-provider/authorize"

// decide posts an authorize request and returns "resource/scope=STATUS"
// per pair plus the top-level status.
func decide(t *testing.T, srv *mockservertest.Server, token, resources, context string) (string, []string) {
	t.Helper()
	body := `{"clientId":"orders-api","resources":` + resources + `,"context":` + context + `}`
	res := bearerCall(t, srv, http.MethodPost, authorizePath, token, body)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	var out struct {
		Status      string `json:"status"`
		Permissions []struct {
			Resource, Scope, Status string
		} `json:"permissions"`
	}
	require.NoError(t, json.Unmarshal(res.Body, &out))
	pairs := make([]string, len(out.Permissions))
	for i, p := range out.Permissions {
		pairs[i] = p.Resource + "/" + p.Scope + "=" + p.Status
	}
	return out.Status, pairs
}

const allPairs = `[{"name":"orders","scopes":["read","write","delete"]},{"name":"invoices","scopes":["read","approve"]}]`

// TestDecisionsTopLevelAndExpansion: /authorize answers the overall
// status and the pairs the body's items expand to, an empty or omitted
// scope list meaning every scope. How the engine expands items and
// combines statuses, and each subject's decisions, are internal/decision's
// TestEvaluateExpansion, TestOverall and TestEvaluatePerSubject; that the
// token's user and organization claim and the context's method reach it is
// TestAcmeExampleFixture's.
func TestDecisionsTopLevelAndExpansion(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
	alice := srv.Token("acme", "alice")
	cases := []struct {
		name, resources string
		wantStatus      string
		wantPairs       []string
	}{
		{"grant only", `[{"name":"orders","scopes":["read"]}]`, "GRANT", []string{"orders/read=GRANT"}},
		{"grant and deny", `[{"name":"orders","scopes":["read","write"]}]`, "DENY", []string{"orders/read=GRANT", "orders/write=DENY"}},
		{"grant and error", `[{"name":"orders","scopes":["read","fly"]}]`, "ERROR", []string{"orders/read=GRANT", "orders/fly=ERROR"}},
		{"empty scopes mean every scope", `[{"name":"orders","scopes":[]}]`, "DENY", []string{"orders/read=GRANT", "orders/write=DENY", "orders/delete=DENY"}},
		{"omitted scopes mean every scope", `[{"name":"invoices"}]`, "DENY", []string{"invoices/read=DENY", "invoices/approve=DENY"}},
		{"wildcard", `[{"name":"*"}]`, "DENY", []string{"orders/read=GRANT", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		// An item that names nothing the client decides is an ERROR pair of
		// its own: beside a granted pair it cannot vanish and leave the
		// request GRANT. Each kind of such item (a resource without scopes
		// too) is internal/decision's TestEveryItemYieldsAPair.
		{"TestAuthorizeItemThatExpandsToNoPairIsNotGranted", `[{"name":"orders","scopes":["read"]},{"name":"*","scopes":["purge"]}]`,
			"ERROR", []string{"orders/read=GRANT", "*/purge=ERROR"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, pairs := decide(t, srv, alice, tc.resources, `{}`)
			require.Equal(t, tc.wantStatus, status)
			require.Equal(t, tc.wantPairs, pairs)
		})
	}
}

// adminGet performs a GET on the organization API as the realm admin and
// decodes the JSON answer.
func adminGet(t *testing.T, srv *mockservertest.Server, token, path string) map[string]any {
	t.Helper()
	res := servertest.Send(t, srv, http.MethodGet, "/admin/realms/acme/organizations"+path, "", nil, http.Header{"Authorization": {"Bearer " + token}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	return res.JSON(t)
}

// subjectOf returns the sub claim of a token.
func subjectOf(t *testing.T, raw string) string {
	t.Helper()
	tok := parseJWT(t, raw, []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
	var c jwt.Claims
	require.NoError(t, tok.UnsafeClaimsWithoutVerification(&c))
	return c.Subject
}

func TestDecisionValidation(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
	alice := srv.Token("acme", "alice")
	many := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	cases := []struct {
		name, body, want string
	}{
		{"missing clientId", `{"resources":[{"name":"orders"}],"context":{}}`, "clientId: is required"},
		{"unknown clientId", `{"clientId":"nope","resources":[{"name":"orders"}],"context":{}}`, `clientId: unknown client (a value of 4 bytes, not repeated)`},
		{"resources missing", `{"clientId":"orders-api","context":{}}`, "the resources array cannot be empty"},
		{"resources empty", `{"clientId":"orders-api","resources":[],"context":{}}`, "the resources array cannot be empty"},
		{"resources null", `{"clientId":"orders-api","resources":null,"context":{}}`, "the resources array cannot be empty"},
		{"resource without a name", `{"clientId":"orders-api","resources":[{"name":"orders"},{"scopes":["read"]}],"context":{}}`, "resources[1].name: is required"},
		{"resource with an empty name", `{"clientId":"orders-api","resources":[{"name":""}],"context":{}}`, "resources[0].name: is required"},
		{"too many resources", `{"clientId":"orders-api","resources":` + many(101, `{"name":"orders"}`) + `,"context":{}}`, "at most 100 resources per request"},
		{"too many scopes", `{"clientId":"orders-api","resources":[{"name":"orders","scopes":` + many(51, `"read"`) + `}],"context":{}}`, "at most 50 scopes per resource"},
		{"context a string", `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":"GET"}`, "context: must be a JSON object"},
		{"context an array", `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":[]}`, "context: must be a JSON object"},
		{"context null", `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":null}`, "context: must be a JSON object"},
		{"context missing", `{"clientId":"orders-api","resources":[{"name":"orders"}]}`, "context: must be a JSON object"},
		{"resources twice", `{"clientId":"orders-api","resources":[],"resources":[{"name":"orders"}],"context":{}}`, "resources: is given twice"},
		{"Resources alone", `{"clientId":"orders-api","Resources":[{"name":"orders"}],"context":{}}`, `Resources: member names are case-sensitive: the field is "resources"`},
		{"Resources beside resources", `{"clientId":"orders-api","resources":[{"name":"orders"}],"Resources":[],"context":{}}`, `Resources: differs only in case from "resources"`},
		{"scope list twice in a resource", `{"clientId":"orders-api","resources":[{"name":"orders","scopes":[],"SCOPES":["read"]}],"context":{}}`, "resources[].SCOPES: differs only in case"},
		{"method twice in the context", `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{"attributes":{"method":"GET","Method":"POST"}}}`, "context.attributes.Method: differs only in case"},
		{"a non-ASCII name (long s, folds like s)", "{\"clientId\":\"orders-api\",\"resources\":[{\"name\":\"orders\",\"scopes\":[\"read\"],\"\u017fcopes\":[]}],\"context\":{}}", "resources[].(a name of 7 bytes, not repeated): member name has a letter that readers take for ASCII letters"},
		{"a non-ASCII name (dotless i, upper-cases to I)", `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{"attributes":{"method":"GET","methıd":"DELETE"}}}`, "context.attributes.(a name of 7 bytes, not repeated): member name has a letter that readers take for ASCII letters"},
		{"method not a string", `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{"attributes":{"method":1}}}`, "context.attributes.method: must be of type string"},
		{"headers an object", `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{"attributes":{"headers":{"X-Tenant":"eu"}}}}`, "context.attributes.headers: must be of type string"},
		{"body not a string", `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{"attributes":{"body":{}}}}`, "context.attributes.body: must be of type string"},
		{"resources not an array", `{"clientId":"orders-api","resources":{"name":"orders"}}`, "resources: must be of type array"},
		{"malformed JSON", `{"clientId":`, "malformed JSON body"},
		{"empty body", ``, "request body is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := bearerCall(t, srv, http.MethodPost, authorizePath, alice, tc.body)
			require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
			body := res.JSON(t)
			require.Equal(t, "Bad Request", body["error"])
			require.Contains(t, body["message"], tc.want)
		})
	}
	t.Run("exactly at the limits", func(t *testing.T) {
		t.Parallel()
		items := strings.Repeat(`{"name":"orders","scopes":["read"]},`, 99) + `{"name":"orders","scopes":` + many(50, `"read"`) + `}`
		res := bearerCall(t, srv, http.MethodPost, authorizePath, alice, `{"clientId":"orders-api","resources":[`+items+`],"context":{}}`)
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	})
	t.Run("oversized body", func(t *testing.T) {
		t.Parallel()
		res := bearerCall(t, srv, http.MethodPost, authorizePath, alice, `{"clientId":"`+strings.Repeat("x", 1<<20)+`"}`)
		require.Equal(t, http.StatusBadRequest, res.Status)
		require.Contains(t, res.JSON(t)["message"], "1 MiB")
	})
}

// TestDecisionContextTakesOnlyItsMembers: a member of the context, or of
// its attributes, that the service does not define is a 400 naming it.
// {"context": {"method": "DELETE"}} used to be read as a context without
// a method, so a permission limited to DELETE silently denied; the method
// belongs under attributes.
func TestDecisionContextTakesOnlyItsMembers(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
	dave := srv.Token("acme", "dave") // may delete orders, with the method DELETE only
	for _, tc := range []struct {
		name, context, field, message string
	}{
		{"method beside attributes", `{"method":"DELETE"}`, "context.method", `unknown member: context takes only "attributes"`},
		{"misspelt attributes", `{"attribute":{"method":"DELETE"}}`, "context.(a name of 9 bytes, not repeated)", `unknown member: context takes only "attributes"`},
		{"unknown attribute", `{"attributes":{"verb":"DELETE"}}`, "context.attributes.(a name of 4 bytes, not repeated)",
			`unknown member: context.attributes takes only "method", "path", "headers" and "body"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := bearerCall(t, srv, http.MethodPost, authorizePath, dave, `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["delete"]}],"context":`+tc.context+`}`)
			require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
			var body struct {
				Error, Message string
				Details        []struct{ Field, Message string }
			}
			require.NoError(t, json.Unmarshal(res.Body, &body))
			require.Equal(t, "Bad Request", body.Error)
			require.Equal(t, tc.field+": "+tc.message, body.Message)
			require.Equal(t, []struct{ Field, Message string }{{tc.field, tc.message}}, body.Details)
		})
	}
	t.Run("the method under attributes decides", func(t *testing.T) {
		t.Parallel()
		status, _ := decide(t, srv, dave, `[{"name":"orders","scopes":["delete"]}]`, `{"attributes":{"method":"DELETE"}}`)
		require.Equal(t, "GRANT", status)
	})
}

func TestDecisionsNeedAValidToken(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
	body := `{"clientId":"orders-api","resources":[],"context":{}}` // 401 comes before 400
	for name, token := range map[string]string{
		"no token":    "",
		"other realm": srv.Token("globex", "gina"),
		"garbage":     "abc",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := bearerCall(t, srv, http.MethodPost, authorizePath, token, body)
			require.Equal(t, http.StatusUnauthorized, res.Status)
			require.Contains(t, res.Header.Get("WWW-Authenticate"), "Bearer")
			require.Equal(t, "Unauthorized", res.JSON(t)["error"])
		})
	}
}

func TestGetOrganizations(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
	path := "/realms/acme/authorization-decision-provider/get-organizations"

	carol := srv.Token("acme", "carol")
	res := bearerCall(t, srv, http.MethodPost, path, carol, `{"clientId":"orders-api"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	var out struct {
		Status       bool `json:"status"`
		Organization struct {
			UserID  string `json:"userId"`
			Tenants []struct {
				TenantID    string `json:"tenantId"`
				TenantName  string `json:"tenantName"`
				Departments []struct {
					DepartmentID   string `json:"departmentId"`
					DepartmentName string `json:"departmentName"`
				} `json:"departments"`
			} `json:"tenants"`
		} `json:"organization"`
	}
	require.NoError(t, json.Unmarshal(res.Body, &out))
	require.True(t, out.Status)
	require.Equal(t, subjectOf(t, carol), out.Organization.UserID)
	var names []string
	for _, tn := range out.Organization.Tenants {
		require.NotEmpty(t, tn.TenantID)
		names = append(names, tn.TenantName+":")
		for _, d := range tn.Departments {
			require.NotEmpty(t, d.DepartmentID)
			names[len(names)-1] += d.DepartmentName + ","
		}
	}
	require.Equal(t, []string{"Acme EU:Sales,", "Acme US:Audit,Ops,"}, names)

	res = bearerCall(t, srv, http.MethodPost, path, srv.Token("acme", "alice"), `{"clientId":"orders-api"}`)
	require.Equal(t, http.StatusOK, res.Status)
	require.JSONEq(t, `{"status":true,"organization":{"userId":"`+subjectOf(t, srv.Token("acme", "alice"))+`","tenants":[]}}`, string(res.Body))

	res = bearerCall(t, srv, http.MethodPost, path, carol, `{}`)
	require.Equal(t, http.StatusBadRequest, res.Status)
	res = bearerCall(t, srv, http.MethodPost, path, carol, `{"clientId":"nope"}`)
	require.Equal(t, http.StatusBadRequest, res.Status)
	res = bearerCall(t, srv, http.MethodPost, path, "", `{"clientId":"orders-api"}`)
	require.Equal(t, http.StatusUnauthorized, res.Status)
}

// TestAcmeExampleFixture checks the decisions the README's fixture promises,
// worked out by hand from examples/fixtures/acme.json.
func TestAcmeExampleFixture(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixtureFile("../examples/fixtures/acme.json"))
	cases := []struct {
		name, user, org, method string
		want                    []string
	}{
		{"alice administers but holds no business role", "alice", "", "GET",
			[]string{"orders/read=DENY", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"bob: support (viewer) and Acme EU sales (order-clerk)", "bob", "", "GET",
			[]string{"orders/read=GRANT", "orders/write=GRANT", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"carol: clerk in EU, manager in US, deleting", "carol", "", "DELETE",
			[]string{"orders/read=GRANT", "orders/write=GRANT", "orders/delete=GRANT", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"carol: delete needs the DELETE method", "carol", "", "GET",
			[]string{"orders/read=GRANT", "orders/write=GRANT", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"carol in Acme EU only", "carol", "acme-eu", "DELETE",
			[]string{"orders/read=GRANT", "orders/write=GRANT", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"carol in Acme US only", "carol", "acme-us", "DELETE",
			[]string{"orders/read=DENY", "orders/write=DENY", "orders/delete=GRANT", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"dave: finance group, EU finance department (auditor)", "dave", "", "GET",
			[]string{"orders/read=GRANT", "orders/write=GRANT", "orders/delete=DENY", "invoices/read=GRANT", "invoices/approve=GRANT"}},
		{"erin is named by a permission", "erin", "", "GET",
			[]string{"orders/read=DENY", "orders/write=DENY", "orders/delete=DENY", "invoices/read=GRANT", "invoices/approve=DENY"}},
		{"the API's service account views", "service-account-orders-api", "", "GET",
			[]string{"orders/read=GRANT", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []mockserver.TokenOption
			if tc.org != "" {
				opts = append(opts, mockserver.TokenOrganization(tc.org))
			}
			_, got := decide(t, srv, srv.Token("acme", tc.user, opts...), allPairs, `{"attributes":{"method":"`+tc.method+`"}}`)
			require.Equal(t, tc.want, got)
		})
	}
}
