package mockserver_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

const (
	searchSubjectPath  = "/realms/acme/access/v1/search/subject"
	searchResourcePath = "/realms/acme/access/v1/search/resource"
	searchActionPath   = "/realms/acme/access/v1/search/action"
)

// searchClient is an authzen client of orders-api's service account that
// found the search endpoints in the realm's metadata, with the hang guard
// (hangguard.Timeout) rather than the 2 s production default, which a
// clean call on a loaded machine can overrun.
func searchClient(t *testing.T, srv *mockservertest.Server) *authzen.Client {
	t.Helper()
	c := testkit.Must(authzen.New(srv.URL+"/realms/acme", authzen.WithTimeout(hangguard.Timeout), authzen.WithHTTPClient(srv.Client())))(t)
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
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
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
		subs := testkit.Must(c.SearchSubject(t.Context(), authzen.Request{Subject: authzen.Subject{Type: "user"}, Action: authzen.Action{Name: "read"}, Resource: orders}, page))(t)
		assert.Equal(t, []string{"alice", "carol"}, names(subs), "limit %d", limit)
		subs = testkit.Must(c.SearchSubject(t.Context(), authzen.Request{Subject: authzen.Subject{Type: "user"}, Action: authzen.Action{Name: "delete"}, Resource: orders,
			Context: map[string]any{"method": "DELETE"}}, page))(t)
		assert.Equal(t, []string{"dave"}, names(subs))

		res := testkit.Must(c.SearchResource(t.Context(), authzen.Request{Subject: user("carol"), Action: authzen.Action{Name: "read"}, Resource: authzen.Resource{Type: "*"}}, page))(t)
		assert.Equal(t, []authzen.Resource{{Type: "orders"}, {Type: "invoices"}}, res)
		res = testkit.Must(c.SearchResource(t.Context(), authzen.Request{Subject: user("alice"), Action: authzen.Action{Name: "read"}, Resource: authzen.Resource{Type: "invoices"}}, page))(t)
		assert.Empty(t, res)

		acts := testkit.Must(c.SearchAction(t.Context(), authzen.Request{Subject: user("carol"), Resource: orders}, page))(t)
		assert.Equal(t, []authzen.Action{{Name: "read"}, {Name: "write"}}, acts)
		acts = testkit.Must(c.SearchAction(t.Context(), authzen.Request{Subject: user("bob"), Resource: authzen.Resource{Type: "invoices", ID: "9"}}, page))(t)
		assert.Equal(t, []authzen.Action{{Name: "approve"}}, acts)
	}

	// The semantics: each result, evaluated, is allowed.
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		res := testkit.Must(c.SearchResource(t.Context(), authzen.Request{Subject: user(u), Action: authzen.Action{Name: "read"}, Resource: authzen.Resource{Type: "*"}}))(t)
		for _, r := range res {
			acts := testkit.Must(c.SearchAction(t.Context(), authzen.Request{Subject: user(u), Resource: authzen.Resource{Type: r.Type, ID: "1"}}))(t)
			for _, a := range acts {
				d := testkit.Must(c.Evaluate(t.Context(), authzen.Request{Subject: user(u), Action: a, Resource: authzen.Resource{Type: r.Type, ID: "1"}}))(t)
				assert.True(t, d.Allowed(), "%s %s %s", u, a.Name, r.Type)
			}
		}
	}
}

// TestAuthZENSearchPages: pages carry count, total and an opaque token that
// serves only the very request it was given for.
func TestAuthZENSearchPages(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(decisionFixture()))
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
	res := bearerCall(t, srv, http.MethodPost, searchActionPath, tok, body(`{"limit":1}`))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.NoError(t, json.Unmarshal(res.Body, &first))
	require.NotEmpty(t, first.Page.NextToken)
	assert.Equal(t, 1, first.Page.Count)
	assert.Equal(t, 2, first.Page.Total)
	assert.Equal(t, []map[string]string{{"name": "read"}}, first.Results)

	next := bearerCall(t, srv, http.MethodPost, searchActionPath, tok, body(`{"limit":1,"token":"`+first.Page.NextToken+`"}`))
	require.Equal(t, http.StatusOK, next.Status, string(next.Body))
	require.JSONEq(t, `{"page":{"next_token":"","count":1,"total":2},"results":[{"name":"write"}]}`, string(next.Body))

	// A body that serves the subject search (subject.id is ignored) and
	// the action search (action is ignored) alike; the token of one does
	// not serve the other.
	full := func(page string) string {
		return `{"subject":{"type":"user","id":"carol"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"},"page":` + page + `}`
	}
	nextOf := func(path string) string {
		res := bearerCall(t, srv, http.MethodPost, path, tok, full(`{"limit":1}`))
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		var p struct {
			Page map[string]json.RawMessage
		}
		require.NoError(t, json.Unmarshal(res.Body, &p))
		var next string
		require.NoError(t, json.Unmarshal(p.Page["next_token"], &next))
		require.NotEmpty(t, next, "%s: %s", path, res.Body)
		return next
	}
	subjectNext, actionNext := nextOf(searchSubjectPath), nextOf(searchActionPath)
	// Alice and carol read orders: the second page is one of them, the
	// last, with no total.
	res = bearerCall(t, srv, http.MethodPost, searchSubjectPath, tok, full(`{"limit":1,"token":"`+subjectNext+`"}`))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	ids := []string{subjectOf(t, srv.Token("acme", "alice")), subjectOf(t, srv.Token("acme", "carol"))}
	slices.Sort(ids)
	require.JSONEq(t, `{"page":{"next_token":"","count":1},"results":[{"type":"user","id":"`+ids[1]+`"}]}`, string(res.Body))
	_, mac, _ := strings.Cut(subjectNext, ".")
	swapped := base64.RawURLEncoding.EncodeToString([]byte(subjectOf(t, srv.Token("acme", "bob")))) + "." + mac

	cases := []struct{ name, path, body, field string }{
		{"subject token with another action", searchSubjectPath, `{"subject":{"type":"user","id":"carol"},"action":{"name":"write"},"resource":{"type":"orders","id":"1"},"page":{"limit":1,"token":"` + subjectNext + `"}}`, "page.token"},
		{"subject token with its cursor swapped", searchSubjectPath, full(`{"limit":1,"token":"` + swapped + `"}`), "page.token"},
		{"subject token at the action search", searchActionPath, full(`{"limit":1,"token":"` + subjectNext + `"}`), "page.token"},
		{"action token at the subject search", searchSubjectPath, full(`{"limit":1,"token":"` + actionNext + `"}`), "page.token"},
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
			res := bearerCall(t, srv, http.MethodPost, tc.path, tok, tc.body)
			require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
			var e struct{ Details []struct{ Field string } }
			require.NoError(t, json.Unmarshal(res.Body, &e))
			require.Len(t, e.Details, 1, string(res.Body))
			assert.Equal(t, tc.field, e.Details[0].Field)
		})
	}

	// What the client does not define is no result and an error, not a 4xx.
	res = bearerCall(t, srv, http.MethodPost, searchActionPath, tok, `{"subject":{"type":"user","id":"carol"},"resource":{"type":"ghost","id":"1"}}`)
	require.Equal(t, http.StatusOK, res.Status)
	require.JSONEq(t, `{"page":{"next_token":"","count":0,"total":0},"results":[],"context":{"error":{"status":404,"message":"client \"orders-api\" defines no resource type (a value of 5 bytes, not repeated)"}}}`, string(res.Body))
	res = bearerCall(t, srv, http.MethodPost, searchSubjectPath, tok, `{"subject":{"type":"group"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"}}`)
	require.Equal(t, http.StatusOK, res.Status)
	require.Contains(t, string(res.Body), `"status":404`)
	res = bearerCall(t, srv, http.MethodPost, searchResourcePath, tok, `{"subject":{"type":"user","id":"nobody"},"action":{"name":"read"},"resource":{"type":"*"}}`)
	require.Equal(t, http.StatusOK, res.Status)
	require.Contains(t, string(res.Body), `no user has the id or username`)

	// A user's token is refused as on the other AuthZEN endpoints.
	res = bearerCall(t, srv, http.MethodPost, searchActionPath, srv.Token("acme", "alice"), body(`{}`))
	require.Equal(t, http.StatusForbidden, res.Status)
}

// pagingFixture is realm acme with 40 users, p00 to p39, who may write
// orders in every way a permission grants: p00, p04, ... hold the role
// editor; p00, p03, ... are in the group writers; p00, p05, ... are in the
// department staff, whose organization gives editor; p07 is named by a
// permission. Nobody may delete orders until assigned to the department
// bin, whose organization gives the role deleter.
func pagingFixture() mockserver.Fixture {
	users := []mockserver.FixtureUser{{Username: "admin", Password: "admin", Roles: []string{"realm-admin"}}}
	var staff []string
	for i := range 40 {
		u := mockserver.FixtureUser{Username: fmt.Sprintf("p%02d", i)}
		if i%4 == 0 {
			u.Roles = []string{"editor"}
		}
		if i%3 == 0 {
			u.Groups = []string{"writers"}
		}
		if i%5 == 0 {
			staff = append(staff, u.Username)
		}
		users = append(users, u)
	}
	return mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:   "acme",
		Roles:  []mockserver.FixtureRole{{Name: "editor"}, {Name: "deleter"}},
		Groups: []mockserver.FixtureGroup{{Name: "writers"}},
		Users:  users,
		Clients: []mockserver.FixtureClient{{
			ClientID: "orders-api", Secret: "orders-secret",
			Resources: []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read", "write", "delete"}}},
			Permissions: []mockserver.FixturePermission{
				{Name: "editors write", Resource: "orders", Scopes: []string{"write"}, Roles: []string{"editor"}},
				{Name: "writers write", Resource: "orders", Scopes: []string{"write"}, Groups: []string{"writers"}},
				{Name: "p07 writes", Resource: "orders", Scopes: []string{"write"}, Users: []string{"p07"}},
				{Name: "deleters delete", Resource: "orders", Scopes: []string{"delete"}, Roles: []string{"deleter"}},
			},
		}},
		Organizations: []mockserver.FixtureOrganization{
			{Name: "Paging", Alias: "paging", Roles: []string{"editor"},
				Departments: []mockserver.FixtureDepartment{{Name: "Staff", Alias: "staff", Users: staff}}},
			{Name: "Deleters", Alias: "deleters", Roles: []string{"deleter"},
				Departments: []mockserver.FixtureDepartment{{Name: "Bin", Alias: "bin"}}},
		},
	}}}
}

// pagingUsers returns the ids of pagingFixture's users p00 to p39 by name.
func pagingUsers(t *testing.T, srv *mockservertest.Server) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for i := range 40 {
		name := fmt.Sprintf("p%02d", i)
		ids[name] = subjectOf(t, srv.Token("acme", name))
	}
	return ids
}

// pageSubjects reads a subject search of orders for action, limit results
// a page (0: no limit given), to its last page, and returns the ids page by
// page; between runs after each page but the last. Every page must be well
// formed: as many results as its count, at most limit, all users; no
// total; an empty next_token on the last page only.
func pageSubjects(t *testing.T, srv *mockservertest.Server, action string, limit int, between func(page int, ids []string)) [][]string {
	t.Helper()
	tok := pepToken(srv)
	var (
		pages [][]string
		next  string
	)
	for {
		page := map[string]any{}
		if limit > 0 {
			page["limit"] = limit
		}
		if next != "" {
			page["token"] = next
		}
		body := testkit.Must(json.Marshal(map[string]any{"subject": map[string]string{"type": "user"}, "action": map[string]string{"name": action},
			"resource": map[string]string{"type": "orders", "id": "1"}, "page": page}))(t)
		res := bearerCall(t, srv, http.MethodPost, searchSubjectPath, tok, string(body))
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		var out struct {
			Page    map[string]json.RawMessage
			Results []map[string]string
		}
		require.NoError(t, json.Unmarshal(res.Body, &out), string(res.Body))
		require.NotContains(t, out.Page, "total", "a subject search has no total")
		var count int
		require.NoError(t, json.Unmarshal(out.Page["count"], &count))
		require.NoError(t, json.Unmarshal(out.Page["next_token"], &next))
		require.Len(t, out.Results, count)
		if limit > 0 {
			require.LessOrEqual(t, count, limit)
		}
		ids := make([]string, 0, count)
		for _, r := range out.Results {
			require.Equal(t, "user", r["type"])
			ids = append(ids, r["id"])
		}
		pages = append(pages, ids)
		if next == "" {
			return pages
		}
		require.NotEmpty(t, ids, "a page before the last is not empty")
		if between != nil {
			between(len(pages), ids)
		}
	}
}

// TestAuthZENSubjectSearchPagesByCursor: whatever the page size, paging
// through a subject search lists exactly the users an evaluation allows,
// once each, in id order, in as few pages as the limit allows (below a
// page's bound of users evaluated, a token promises a result after it);
// and the client's search reads the same.
func TestAuthZENSubjectSearchPagesByCursor(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(pagingFixture()))
	c := searchClient(t, srv)
	var want []string
	for name, id := range pagingUsers(t, srv) {
		d := testkit.Must(c.Evaluate(t.Context(), authzen.Request{Subject: user(name), Action: authzen.Action{Name: "write"}, Resource: authzen.Resource{Type: "orders", ID: "1"}}))(t)
		if d.Allowed() {
			want = append(want, id)
		}
	}
	slices.Sort(want)
	require.Len(t, want, 25, "p07, and p00 to p39 by 3, 4 or 5")

	for _, limit := range []int{1, 2, 3, 7, 24, 25, 26, 0} {
		pages := pageSubjects(t, srv, "write", limit, nil)
		assert.Equal(t, want, slices.Concat(pages...), "limit %d", limit)
		if limit > 0 {
			assert.Len(t, pages, (len(want)+limit-1)/limit, "limit %d", limit)
		}
	}
	subs := testkit.Must(c.SearchSubject(t.Context(), authzen.Request{Subject: authzen.Subject{Type: "user"}, Action: authzen.Action{Name: "write"},
		Resource: authzen.Resource{Type: "orders", ID: "1"}}, authzen.WithPageLimit(5)))(t)
	var got []string
	for _, s := range subs {
		got = append(got, s.ID)
	}
	assert.Equal(t, want, got)

	// No match at all: one empty last page.
	assert.Equal(t, [][]string{{}}, pageSubjects(t, srv, "delete", 3, nil))
}

// TestAuthZENSubjectSearchBetweenPages: a page resumes after the last id
// the page before it returned, so a change between pages repeats nothing
// and skips no user who still matches. Users who stop matching before the
// cursor change nothing (with offsets, the next page would have skipped a
// match); after it, they are not listed. New matches after the cursor are
// listed; before it, they are not (with offsets, a result would have been
// listed twice).
func TestAuthZENSubjectSearchBetweenPages(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(pagingFixture()))
	admin := srv.Token("acme", "admin")
	users := pagingUsers(t, srv)
	ids := slices.Sorted(maps.Values(users))
	org := adminGet(t, srv, admin, "/alias/deleters")["result"].(map[string]any)["id"].(string)
	bin := adminGet(t, srv, admin, "/"+org+"/departments")["results"].([]any)[0].(map[string]any)["id"].(string)
	binPath := "/admin/realms/acme/organizations/" + org + "/departments/" + bin + "/users"
	auth := http.Header{"Authorization": {"Bearer " + admin}}
	assign := func(id string) {
		res := servertest.Send(t, srv, http.MethodPost, binPath, "application/json", strings.NewReader(`{"userId":"`+id+`"}`), auth)
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	}
	unassign := func(id string) {
		res := servertest.Send(t, srv, http.MethodDelete, binPath+"/"+id, "", nil, auth)
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	}
	// Every user may delete but ids[5] and ids[30]; the first page of
	// ten ends at ids[10].
	for i, id := range ids {
		if i != 5 && i != 30 {
			assign(id)
		}
	}
	pages := pageSubjects(t, srv, "delete", 10, func(page int, got []string) {
		switch page {
		case 1:
			require.Equal(t, slices.Concat(ids[:5], ids[6:11]), got)
			unassign(ids[2])  // before the cursor: ids[11] still comes next
			unassign(ids[20]) // after it
			assign(ids[30])   // after it
		case 2:
			require.Equal(t, slices.Concat(ids[11:20], ids[21:22]), got)
			assign(ids[5]) // before the cursor: ids[21] does not come again
		}
	})
	assert.Equal(t, [][]string{ids[22:32], ids[32:]}, pages[2:], "the pages after the changes")
}
