package mockserver

import (
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// answerIDs returns the ids of DecisionFixture's users, roles, group,
// organizations and departments by "<kind> <name or alias>", such as
// "user alice" or "dept sales".
func answerIDs(t *testing.T, s *Server) map[string]string {
	t.Helper()
	ids := map[string]string{}
	require.NoError(t, s.store.Read("acme", func(r *store.Realm) error {
		for _, u := range []string{"alice", "bob", "carol", "dave"} {
			ids["user "+u] = r.UserByName[u]
		}
		for _, n := range []string{"viewer", "editor", "auditor", "approver"} {
			ids["role "+n] = r.RoleByName[n]
		}
		ids["group finance"] = r.GroupByName["finance"]
		for _, o := range []string{"eu", "us"} {
			ids["org "+o] = r.OrgByAlias[o]
		}
		for _, d := range r.Depts {
			ids["dept "+d.Alias] = d.ID
		}
		return nil
	}))
	return ids
}

// TestAnswersFollowEveryWrite: /authorize answers a repeated request from
// its cache of answers, and every write of the realm, of any kind, is seen
// by the next decision of every caller. After each write, each caller's
// answer to each body, asked twice (the second from the cache), is the
// answer the engine gives on the live realm, and the callers' answers stay
// their own (a subject's or an organization claim's answer is never
// another's).
func TestAnswersFollowEveryWrite(t *testing.T) {
	t.Parallel()
	s := mustNew(t, WithFixture(DecisionFixture()), WithIssuer(answersBase), WithKeySeed([]byte("answer-cache-test")))

	askers := answerAskers(t, s)
	bodies := answerBodies
	distinct := map[string]bool{}
	check := func(t *testing.T, step string) {
		t.Helper()
		for _, a := range askers {
			for _, b := range bodies {
				status, answer := answersWant(t, s, a.user, a.org, b.resources, b.method)
				for i := range 2 {
					rec := answersAsk(s, a.token, b.body)
					require.Equal(t, status, rec.Code, "%s: %s of %q, ask %d: %s", step, a.user, a.org, i, rec.Body)
					if status == http.StatusOK {
						require.Equal(t, answer, rec.Body.String(), "%s: %s of %q, ask %d, %s", step, a.user, a.org, i, b.body)
						distinct[answer] = true
					}
				}
			}
		}
	}
	// The ids, looked up before the writes (a write cannot Read).
	ids := answerIDs(t, s)
	id := func(kind, name string) string {
		v := ids[kind+" "+name]
		require.NotEmpty(t, v, "%s %q", kind, name)
		return v
	}
	// replacePermissions replaces orders-api by a copy whose permissions
	// fn changed (clients are never changed in place).
	replacePermissions := func(fn func([]store.ClientPermission) []store.ClientPermission) func(*store.Realm) error {
		return func(r *store.Realm) error {
			c, ok := r.ClientNamed("orders-api")
			if !ok {
				return errors.New("no orders-api")
			}
			cc := *c
			cc.Permissions = fn(slices.Clone(c.Permissions))
			r.Clients[c.ID] = &cc
			return nil
		}
	}
	now := time.Unix(0, 0)
	steps := []struct {
		name  string
		write func(r *store.Realm) error
	}{
		{"unassign", func(r *store.Realm) error { return r.Unassign(id("user", "carol"), id("dept", "sales")) }},
		{"assign", func(r *store.Realm) error {
			_, _, err := r.Assign(id("user", "alice"), id("dept", "ops"), now)
			return err
		}},
		{"unlink an organization role", func(r *store.Realm) error { return r.UnlinkRole(id("org", "us"), id("role", "auditor")) }},
		{"link an organization role", func(r *store.Realm) error { _, err := r.LinkRole(id("org", "eu"), id("role", "editor")); return err }},
		{"join a group", func(r *store.Realm) error {
			u := r.Users[id("user", "dave")]
			if u.GroupIDs == nil {
				u.GroupIDs = store.Set{}
			}
			u.GroupIDs[id("group", "finance")] = struct{}{}
			return nil
		}},
		{"a group's roles", func(r *store.Realm) error {
			r.Groups[id("group", "finance")].RoleIDs[id("role", "viewer")] = struct{}{}
			return nil
		}},
		{"a direct role", func(r *store.Realm) error {
			u := r.Users[id("user", "carol")]
			if u.RoleIDs == nil {
				u.RoleIDs = store.Set{}
			}
			u.RoleIDs[id("role", "auditor")] = struct{}{}
			return nil
		}},
		{"a permission granted to a role", replacePermissions(func(ps []store.ClientPermission) []store.ClientPermission {
			ps[0].Roles = append(slices.Clone(ps[0].Roles), id("role", "auditor"))
			return ps
		})},
		{"a permission removed", replacePermissions(func(ps []store.ClientPermission) []store.ClientPermission {
			return slices.Delete(ps, 1, 2)
		})},
		{"a permission's methods", replacePermissions(func(ps []store.ClientPermission) []store.ClientPermission {
			for i := range ps {
				if ps[i].Name == "dave deletes" {
					ps[i].Methods = []string{"GET"}
				}
			}
			return ps
		})},
		{"delete a department", func(r *store.Realm) error {
			_, err := r.DeleteDepartment(id("org", "us"), id("dept", "ops"))
			return err
		}},
		{"delete an organization", func(r *store.Realm) error { return r.DeleteOrganization(id("org", "us")) }},
		{"a write that fails half-way", func(r *store.Realm) error {
			r.Users[id("user", "bob")].GroupIDs = nil
			return errors.New("refused after a change")
		}},
		{"the client removed", func(r *store.Realm) error {
			c, _ := r.ClientNamed("orders-api")
			delete(r.Clients, c.ID)
			delete(r.ClientByID, c.ClientID)
			return nil
		}},
	}
	check(t, "before any write")
	for _, st := range steps {
		_ = s.store.Write("acme", st.write)
		check(t, st.name)
	}
	require.Greater(t, len(distinct), 6, "the steps change the answers")
}

// TestAnswerCacheComparesTheWholeRequest: an entry found in a slot is
// another request's when its realm, subject, organization claim or body
// differs (the slot is chosen by a hash): it is no answer to this one.
func TestAnswerCacheComparesTheWholeRequest(t *testing.T) {
	t.Parallel()
	ac := newAnswerCache()
	rm, other := &store.Realm{}, &store.Realm{}
	c := &caller{rm: rm, subject: "u", org: "o"}
	body := []byte(`{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{}}`)
	slot := ac.slot(c, body)
	ac.store(slot, &cachedAnswer{rm: rm, user: "u", org: "o", body: string(body), answer: []byte("answer")})
	require.NotNil(t, ac.lookup(slot, c, body))
	for name, ask := range map[string]struct {
		c    *caller
		body string
	}{
		"another body":                 {c, `{"clientId":"orders-api","resources":[{"name":"invoice"}],"context":{}}`},
		"another organization claim":   {&caller{rm: rm, subject: "u", org: "p"}, string(body)},
		"no organization claim":        {&caller{rm: rm, subject: "u"}, string(body)},
		"another subject":              {&caller{rm: rm, subject: "v", org: "o"}, string(body)},
		"another realm, the same user": {&caller{rm: other, subject: "u", org: "o"}, string(body)},
	} {
		require.Nil(t, ac.lookup(slot, ask.c, []byte(ask.body)), "%s in the slot of the first (a collision) is not answered", name)
	}
}

// answerAsker is a caller of the answer tests: a user, its token's
// organization claim, and the token.
type answerAsker struct{ user, org, token string }

// answerAskers returns a token of each of DecisionFixture's four users under
// each organization claim (none, eu, us).
func answerAskers(t *testing.T, s *Server) []answerAsker {
	t.Helper()
	var askers []answerAsker
	for _, user := range []string{"alice", "bob", "carol", "dave"} {
		for _, org := range []string{"", "eu", "us"} {
			tok := mustIssue(t, s, "acme", user, TokenOrganization(org))
			askers = append(askers, answerAsker{user, org, tok})
		}
	}
	return askers
}

// answerBodies are the bodies the answer tests ask, with the pairs and
// method each names: two pairs, a method-bound scope, the wildcard.
var answerBodies = []struct {
	body      string
	resources []decision.Resource
	method    string
}{
	{`{"clientId":"orders-api","resources":[{"name":"orders"},{"name":"invoices"}],"context":{}}`,
		[]decision.Resource{{Name: "orders"}, {Name: "invoices"}}, ""},
	{`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["delete","write"]}],"context":{"attributes":{"method":"DELETE"}}}`,
		[]decision.Resource{{Name: "orders", Scopes: []string{"delete", "write"}}}, "DELETE"},
	{`{"clientId":"orders-api","resources":[{"name":"*"}],"context":{}}`,
		[]decision.Resource{{Name: "*"}}, ""},
}
