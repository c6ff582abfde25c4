package mockserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

type attackSrv struct {
	t *testing.T
	s *Server
}

func (a attackSrv) do(token, method, path, body string) (int, string) {
	var r *http.Request
	if body != "" {
		r = httptest.NewRequest(method, "http://srv.test"+path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	} else {
		r = httptest.NewRequest(method, "http://srv.test"+path, nil)
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	a.s.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// decide returns the overall status of one pair for token.
func (a attackSrv) decide(token, resource, scope string) string {
	code, body := a.do(token, "POST", "/realms/acme/authorization-decision-provider/authorize",
		`{"clientId":"orders-api","resources":[{"name":"`+resource+`","scopes":["`+scope+`"]}],"context":{}}`)
	if code != 200 {
		return "HTTP " + body
	}
	var out struct{ Status string }
	_ = json.Unmarshal([]byte(body), &out)
	return out.Status
}

// TestDecisionFollowsWritesUnderLoad: while other goroutines keep
// the subject cache warm with carol's and alice's decisions, carol is
// assigned to and unassigned from a department of EU (which links editor:
// orders/write) and a group grants/loses a role; the decision right after
// each write returns must reflect it.
func TestDecisionFollowsWritesUnderLoad(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	s := mustNew(t, WithFixture(attackFixture()), WithIssuer("http://srv.test"), WithClock(func() time.Time { return now }), es256Tokens)
	a := attackSrv{t: t, s: s}
	admin := mustIssue(t, s, "acme", "admin")
	carol := mustIssue(t, s, "acme", "carol")
	carolEU := mustIssue(t, s, "acme", "carol", TokenOrganization("eu"))
	alice := mustIssue(t, s, "acme", "alice")

	var orgID, carolID string
	require.NoError(t, s.store.Read("acme", func(rm *store.Realm) error {
		o, err := rm.OrganizationByAlias("eu")
		if err != nil {
			return err
		}
		orgID = o.ID
		u, _ := rm.UserNamed("carol")
		carolID = u.ID
		return nil
	}))
	code, body := a.do(admin, "POST", "/admin/realms/acme/organizations/"+orgID+"/departments", `{"name":"Ops2"}`)
	require.Equal(t, 201, code, body)
	var dept struct{ Result struct{ ID string } }
	require.NoError(t, json.Unmarshal([]byte(body), &dept))
	users := "/admin/realms/acme/organizations/" + orgID + "/departments/" + dept.Result.ID + "/users"

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, tok := range []string{carol, carolEU, alice, carol} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100000 && ctx.Err() == nil; i++ {
				a.decide(tok, "orders", "write")
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()

	for i := range 50 { // 100 writes, each under the decisions of four goroutines
		code, body := a.do(admin, "POST", users, `{"userId":"`+carolID+`"}`)
		require.Equal(t, 200, code, body)
		require.Equal(t, "GRANT", a.decide(carol, "orders", "write"), "round %d: assigned", i)
		require.Equal(t, "GRANT", a.decide(carolEU, "orders", "write"), "round %d: assigned (eu token)", i)
		code, body = a.do(admin, "DELETE", users+"/"+carolID, "")
		require.Equal(t, 200, code, body)
		require.Equal(t, "DENY", a.decide(carol, "orders", "write"), "round %d: unassigned", i)
		require.Equal(t, "DENY", a.decide(carolEU, "orders", "write"), "round %d: unassigned (eu token)", i)
	}
}
