package mockserver_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

const (
	searchSubjectPath  = "/realms/acme/access/v1/search/subject"
	searchResourcePath = "/realms/acme/access/v1/search/resource"
	searchActionPath   = "/realms/acme/access/v1/search/action"
)

// searchClient is an authzen client of orders-api's service account that
// found the search endpoints in the realm's metadata.
func searchClient(t *testing.T, srv *mockservertest.Server) *authzen.Client {
	t.Helper()
	c, err := authzen.New(srv.URL+"/realms/acme", authzen.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	c.SetToken(pepToken(srv))
	require.NoError(t, c.Discover(t.Context()))
	return c
}

func user(name string) authzen.Subject { return authzen.Subject{Type: "user", ID: name} }

// TestAuthZENSearch: the three searches, through the client, answer what
// the decision engine grants, whatever the page size; every result is one
// an evaluation allows.
func TestAuthZENSearch(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(decisionFixture()))
	c := searchClient(t, srv)
	ids := map[string]string{}
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		ids[subjectOf(t, srv.Token("acme", u))] = u
	}
	names := func(subs []authzen.Subject) []string {
		var out []string
		for _, s := range subs {
			require.Equal(t, "user", s.Type)
			out = append(out, ids[s.ID])
		}
		slices.Sort(out)
		return out
	}
	orders := authzen.Resource{Type: "orders", ID: "1"}
	for _, limit := range []int{0, 1, 2} {
		page := authzen.WithPageLimit(limit)
		subs, err := c.SearchSubject(t.Context(), authzen.Request{Subject: authzen.Subject{Type: "user"}, Action: authzen.Action{Name: "read"}, Resource: orders}, page)
		require.NoError(t, err)
		assert.Equal(t, []string{"alice", "carol"}, names(subs), "limit %d", limit)
		subs, err = c.SearchSubject(t.Context(), authzen.Request{Subject: authzen.Subject{Type: "user"}, Action: authzen.Action{Name: "delete"}, Resource: orders,
			Context: map[string]any{"method": "DELETE"}}, page)
		require.NoError(t, err)
		assert.Equal(t, []string{"dave"}, names(subs))

		res, err := c.SearchResource(t.Context(), authzen.Request{Subject: user("carol"), Action: authzen.Action{Name: "read"}, Resource: authzen.Resource{Type: "*"}}, page)
		require.NoError(t, err)
		assert.Equal(t, []authzen.Resource{{Type: "orders"}, {Type: "invoices"}}, res)
		res, err = c.SearchResource(t.Context(), authzen.Request{Subject: user("alice"), Action: authzen.Action{Name: "read"}, Resource: authzen.Resource{Type: "invoices"}}, page)
		require.NoError(t, err)
		assert.Empty(t, res)

		acts, err := c.SearchAction(t.Context(), authzen.Request{Subject: user("carol"), Resource: orders}, page)
		require.NoError(t, err)
		assert.Equal(t, []authzen.Action{{Name: "read"}, {Name: "write"}}, acts)
		acts, err = c.SearchAction(t.Context(), authzen.Request{Subject: user("bob"), Resource: authzen.Resource{Type: "invoices", ID: "9"}}, page)
		require.NoError(t, err)
		assert.Equal(t, []authzen.Action{{Name: "approve"}}, acts)
	}

	// The semantics: each result, evaluated, is allowed.
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		res, err := c.SearchResource(t.Context(), authzen.Request{Subject: user(u), Action: authzen.Action{Name: "read"}, Resource: authzen.Resource{Type: "*"}})
		require.NoError(t, err)
		for _, r := range res {
			acts, err := c.SearchAction(t.Context(), authzen.Request{Subject: user(u), Resource: authzen.Resource{Type: r.Type, ID: "1"}})
			require.NoError(t, err)
			for _, a := range acts {
				d, err := c.Evaluate(t.Context(), authzen.Request{Subject: user(u), Action: a, Resource: authzen.Resource{Type: r.Type, ID: "1"}})
				require.NoError(t, err)
				assert.True(t, d.Allowed(), "%s %s %s", u, a.Name, r.Type)
			}
		}
	}
}

// TestAuthZENSearchPages: pages carry count, total and an opaque token that
// serves only the very request it was given for.
func TestAuthZENSearchPages(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixture(decisionFixture()))
	tok := pepToken(srv)
	body := func(page string) string {
		return `{"subject":{"type":"user","id":"carol"},"resource":{"type":"orders","id":"1"},"page":` + page + `}`
	}
	var first struct {
		Page struct {
			NextToken    string `json:"next_token"`
			Count, Total int
		}
		Results []map[string]string
	}
	res := postJSON(t, srv, searchActionPath, tok, body(`{"limit":1}`))
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.NoError(t, json.Unmarshal(res.body, &first))
	require.NotEmpty(t, first.Page.NextToken)
	assert.Equal(t, 1, first.Page.Count)
	assert.Equal(t, 2, first.Page.Total)
	assert.Equal(t, []map[string]string{{"name": "read"}}, first.Results)

	next := postJSON(t, srv, searchActionPath, tok, body(`{"limit":1,"token":"`+first.Page.NextToken+`"}`))
	require.Equal(t, http.StatusOK, next.status, string(next.body))
	require.JSONEq(t, `{"page":{"next_token":"","count":1,"total":2},"results":[{"name":"write"}]}`, string(next.body))

	cases := []struct{ name, path, body, field string }{
		{"token with another limit", searchActionPath, body(`{"limit":2,"token":"` + first.Page.NextToken + `"}`), "page.token"},
		{"token for another subject", searchActionPath, `{"subject":{"type":"user","id":"alice"},"resource":{"type":"orders","id":"1"},"page":{"limit":1,"token":"` + first.Page.NextToken + `"}}`, "page.token"},
		{"token from another search", searchSubjectPath, `{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"},"page":{"token":"` + first.Page.NextToken + `"}}`, "page.token"},
		{"forged token", searchActionPath, body(`{"limit":1,"token":"eyJvIjoxLCJkIjoiIn0"}`), "page.token"},
		{"token not base64", searchActionPath, body(`{"limit":1,"token":"%%%"}`), "page.token"},
		{"negative limit", searchActionPath, body(`{"limit":-1}`), "page.limit"},
		{"limit not an integer", searchActionPath, body(`{"limit":1.5}`), "page.limit"},
		{"subject search without action", searchSubjectPath, `{"subject":{"type":"user"},"resource":{"type":"orders","id":"1"}}`, "action"},
		{"subject search without resource id", searchSubjectPath, `{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"orders"}}`, "resource.id"},
		{"resource search without subject id", searchResourcePath, `{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"orders"}}`, "subject.id"},
		{"action search without resource type", searchActionPath, `{"subject":{"type":"user","id":"carol"},"resource":{"id":"1"}}`, "resource.type"},
		{"member twice", searchActionPath, `{"subject":{"type":"user","id":"carol","id":"alice"},"resource":{"type":"orders","id":"1"}}`, "subject.id"},
		{"page in another case", searchActionPath, `{"subject":{"type":"user","id":"carol"},"resource":{"type":"orders","id":"1"},"Page":{}}`, "Page"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := postJSON(t, srv, tc.path, tok, tc.body)
			require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
			var e struct{ Details []struct{ Field string } }
			require.NoError(t, json.Unmarshal(res.body, &e))
			require.Len(t, e.Details, 1, string(res.body))
			assert.Equal(t, tc.field, e.Details[0].Field)
		})
	}

	// What the client does not define is no result and an error, not a 4xx.
	res = postJSON(t, srv, searchActionPath, tok, `{"subject":{"type":"user","id":"carol"},"resource":{"type":"ghost","id":"1"}}`)
	require.Equal(t, http.StatusOK, res.status)
	require.JSONEq(t, `{"page":{"next_token":"","count":0,"total":0},"results":[],"context":{"error":{"status":404,"message":"client \"orders-api\" defines no resource type \"ghost\""}}}`, string(res.body))
	res = postJSON(t, srv, searchSubjectPath, tok, `{"subject":{"type":"group"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"}}`)
	require.Equal(t, http.StatusOK, res.status)
	require.Contains(t, string(res.body), `"status":404`)
	res = postJSON(t, srv, searchResourcePath, tok, `{"subject":{"type":"user","id":"nobody"},"action":{"name":"read"},"resource":{"type":"*"}}`)
	require.Equal(t, http.StatusOK, res.status)
	require.Contains(t, string(res.body), `no user has the id or username`)

	// A user's token is refused as on the other AuthZEN endpoints.
	res = postJSON(t, srv, searchActionPath, srv.Token("acme", "alice"), body(`{}`))
	require.Equal(t, http.StatusForbidden, res.status)
}
