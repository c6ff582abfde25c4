package mockserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

const (
	evaluationPath  = "/realms/acme/access/v1/evaluation"
	evaluationsPath = "/realms/acme/access/v1/evaluations"
)

// pepToken is the token of orders-api's service account: the PEP's own.
func pepToken(srv *mockservertest.Server) string {
	return srv.Token("acme", "service-account-orders-api")
}

func az(user, action, resource string) string {
	return `{"subject":{"type":"user","id":"` + user + `"},"action":{"name":"` + action + `"},"resource":{"type":"` + resource + `","id":"1"}}`
}

// TestAuthZENEvaluation: the Access Evaluation API answers the realm's
// decision engine for the PEP's own client; a subject is a user id or a
// username; what the client does not define is a denial with an error.
// The batch's rows (evaluationsPath, TestAuthZENEvaluations before):
// items are completed from the batch's defaults, answered in order, and
// the semantics stop where AuthZEN 1.0 says; with no items the request is
// a single evaluation.
func TestAuthZENEvaluation(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
	tok := pepToken(srv)
	aliceID := subjectOf(t, srv.Token("acme", "alice"))
	items := `"subject":{"type":"user","id":"alice"},"resource":{"type":"orders","id":"1"},"evaluations":[{"action":{"name":"write"}},{"action":{"name":"read"}},{"action":{"name":"delete"}},{"subject":{"type":"user","id":"bob"},"action":{"name":"approve"},"resource":{"type":"invoices","id":"2"}}]`
	cases := []struct{ path, name, body, want string }{
		{evaluationPath, "granted by role", az("alice", "read", "orders"), `{"decision":true}`},
		{evaluationPath, "by user id", az(aliceID, "read", "orders"), `{"decision":true}`},
		{evaluationPath, "denied", az("alice", "write", "orders"), `{"decision":false}`},
		{evaluationPath, "group", az("bob", "approve", "invoices"), `{"decision":true}`},
		{evaluationPath, "method from the context", `{"subject":{"type":"user","id":"dave"},"action":{"name":"delete"},"resource":{"type":"orders","id":"7"},"context":{"method":"DELETE"}}`, `{"decision":true}`},
		{evaluationPath, "other method", `{"subject":{"type":"user","id":"dave"},"action":{"name":"delete"},"resource":{"type":"orders","id":"7"},"context":{"method":"GET"}}`, `{"decision":false}`},
		{evaluationPath, "method not a string", `{"subject":{"type":"user","id":"dave"},"action":{"name":"delete"},"resource":{"type":"orders","id":"7"},"context":{"method":["DELETE"]}}`, `{"decision":false}`},
		{evaluationPath, "unknown user", az("nobody", "read", "orders"), `{"decision":false,"context":{"error":{"status":404,"message":"no user has the id or username (a value of 6 bytes, not repeated)"}}}`},
		{evaluationPath, "unknown subject type", `{"subject":{"type":"group","id":"finance"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"}}`, `{"decision":false,"context":{"error":{"status":404,"message":"subject type \"group\" is unknown: the subjects are users (type \"user\")"}}}`},
		{evaluationPath, "undefined action", az("alice", "fly", "orders"), `{"decision":false,"context":{"error":{"status":404,"message":"client \"orders-api\" defines no resource type \"orders\" with the action (a value of 3 bytes, not repeated)"}}}`},
		{evaluationPath, "undefined resource", az("alice", "read", "*"), `{"decision":false,"context":{"error":{"status":404,"message":"client \"orders-api\" defines no resource type \"*\" with the action \"read\""}}}`},
		{evaluationsPath, "execute_all by default", `{` + items + `}`, `{"evaluations":[{"decision":false},{"decision":true},{"decision":false},{"decision":true}]}`},
		{evaluationsPath, "execute_all", `{"options":{"evaluations_semantic":"execute_all"},` + items + `}`, `{"evaluations":[{"decision":false},{"decision":true},{"decision":false},{"decision":true}]}`},
		{evaluationsPath, "deny_on_first_deny", `{"options":{"evaluations_semantic":"deny_on_first_deny"},` + items + `}`, `{"evaluations":[{"decision":false}]}`},
		{evaluationsPath, "permit_on_first_permit", `{"options":{"evaluations_semantic":"permit_on_first_permit"},` + items + `}`, `{"evaluations":[{"decision":false},{"decision":true}]}`},
		{evaluationsPath, "no items: one evaluation", `{"subject":{"type":"user","id":"alice"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"},"evaluations":[]}`, `{"decision":true}`},
		{evaluationsPath, "the item's context replaces the default", `{"subject":{"type":"user","id":"dave"},"action":{"name":"delete"},"resource":{"type":"orders","id":"1"},"context":{"method":"DELETE"},"evaluations":[{},{"context":{"method":"GET"}}]}`,
			`{"evaluations":[{"decision":true},{"decision":false}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := bearerCall(t, srv, http.MethodPost, tc.path, tok, tc.body)
			require.Equal(t, http.StatusOK, res.Status, string(res.Body))
			require.JSONEq(t, tc.want, string(res.Body))
		})
	}
}

// TestAuthZENRefusals: malformed, ambiguous or incomplete requests are 400s
// naming the field, other credentials than a client's service account are
// refused, and nothing is ever a 5xx.
func TestAuthZENRefusals(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
	tok := pepToken(srv)
	many := strings.Repeat(`{},`, 100) + `{}`
	cases := []struct {
		name, path, token, body string
		status                  int
		field                   string
	}{
		{"no subject", evaluationPath, tok, `{"action":{"name":"read"},"resource":{"type":"orders","id":"1"}}`, 400, "subject"},
		{"empty subject id", evaluationPath, tok, `{"subject":{"type":"user","id":""},"action":{"name":"read"},"resource":{"type":"orders","id":"1"}}`, 400, "subject.id"},
		{"no resource id", evaluationPath, tok, `{"subject":{"type":"user","id":"alice"},"action":{"name":"read"},"resource":{"type":"orders"}}`, 400, "resource.id"},
		{"action name not a string", evaluationPath, tok, `{"subject":{"type":"user","id":"alice"},"action":{"name":1},"resource":{"type":"orders","id":"1"}}`, 400, "action.name"},
		{"member twice", evaluationPath, tok, `{"subject":{"type":"user","id":"bob","id":"alice"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"}}`, 400, "subject.id"},
		{"member in another case", evaluationPath, tok, `{"Subject":{"type":"user","id":"alice"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"}}`, 400, "Subject"},
		{"item incomplete", evaluationsPath, tok, `{"subject":{"type":"user","id":"alice"},"evaluations":[{"action":{"name":"read"},"resource":{"type":"orders","id":"1"}},{"action":{"name":"read"}}]}`, 400, "evaluations[1].resource"},
		{"unknown semantic", evaluationsPath, tok, `{"options":{"evaluations_semantic":"first"},"evaluations":[` + az("alice", "read", "orders") + `]}`, 400, "options.evaluations_semantic"},
		{"too many items", evaluationsPath, tok, `{"evaluations":[` + many + `]}`, 400, "evaluations"},
		{"a user's token", evaluationPath, srv.Token("acme", "alice"), az("alice", "read", "orders"), 403, ""},
		{"another client's user token", evaluationPath, srv.Token("acme", "alice", mockserver.TokenClient("orders-api")), az("alice", "read", "orders"), 403, ""},
		{"no token", evaluationsPath, "", `{"evaluations":[` + az("alice", "read", "orders") + `]}`, 401, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := bearerCall(t, srv, http.MethodPost, tc.path, tc.token, tc.body)
			require.Equal(t, tc.status, res.Status, string(res.Body))
			var e struct {
				Error, Message string
				Details        []struct{ Field string }
			}
			require.NoError(t, json.Unmarshal(res.Body, &e))
			require.NotEmpty(t, e.Message)
			if tc.field != "" {
				require.Len(t, e.Details, 1, string(res.Body))
				require.Equal(t, tc.field, e.Details[0].Field)
			}
		})
	}
	res := servertest.Send(t, srv, http.MethodPost, evaluationPath, "text/plain", strings.NewReader(az("alice", "read", "orders")), http.Header{"Authorization": {"Bearer " + tok}})
	require.Equal(t, http.StatusUnsupportedMediaType, res.Status)
}

// TestAuthZENMetadata: the realm's PDP metadata names the realm's issuer
// URL as the PDP and endpoints that answer, at both paths; an unknown
// realm is a 404.
func TestAuthZENMetadata(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
	for _, path := range []string{"/realms/acme/.well-known/authzen-configuration", "/.well-known/authzen-configuration/realms/acme"} {
		res := servertest.Send(t, srv, http.MethodGet, path, "", nil, nil)
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		var m map[string]string
		require.NoError(t, json.Unmarshal(res.Body, &m))
		require.Equal(t, map[string]string{
			"policy_decision_point":       srv.URL + "/realms/acme",
			"access_evaluation_endpoint":  srv.URL + evaluationPath,
			"access_evaluations_endpoint": srv.URL + evaluationsPath,
			"search_subject_endpoint":     srv.URL + searchSubjectPath,
			"search_resource_endpoint":    srv.URL + searchResourcePath,
			"search_action_endpoint":      srv.URL + searchActionPath,
		}, m)
	}
	res := servertest.Send(t, srv, http.MethodGet, "/realms/nowhere/.well-known/authzen-configuration", "", nil, nil)
	require.Equal(t, http.StatusNotFound, res.Status)
}
