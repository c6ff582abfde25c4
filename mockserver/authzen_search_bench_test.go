package mockserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

const (
	searchBenchPath = "/realms/big/access/v1/search/subject"
	searchBenchBody = `{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"},"page":{"limit":10}}`
)

// searchFixture builds realm "big" with n users, every second one a member,
// and the client orders-api, whose members may read orders.
func searchFixture(n int) Fixture {
	users := make([]FixtureUser, n)
	for i := range users {
		users[i] = FixtureUser{Username: fmt.Sprint("u", i)}
		if i%2 == 0 {
			users[i].Roles = []string{"member"}
		}
	}
	return Fixture{Realms: []FixtureRealm{{
		Name:  "big",
		Roles: []FixtureRole{{Name: "member"}},
		Users: users,
		Clients: []FixtureClient{{
			ClientID: "orders-api", Secret: "s",
			Resources:   []FixtureResource{{Name: "orders", Scopes: []string{"read", "write"}}},
			Permissions: []FixturePermission{{Name: "members read", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"member"}}},
		}},
	}}}
}

// BenchmarkAuthZENSubjectSearchPage measures one page of 10 subjects from
// the middle of the results (half the users of the realm match), for a
// realm of 1k and of 100k users: a page costs what it reads, so the time
// per page is flat in the size of the realm.
func BenchmarkAuthZENSubjectSearchPage(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			s := scaleServer(b, searchFixture(n))
			tok, err := s.IssueToken("big", "service-account-orders-api")
			if err != nil {
				b.Fatal(err)
			}
			var req azSearch
			if err := json.Unmarshal([]byte(searchBenchBody), &req); err != nil {
				b.Fatal(err)
			}
			scope := "big\x00orders-api\x00subject\x00" + req.digest()
			page := pageToken(s.auth.pageKey, scope, middleUserID(b, s))
			body := fmt.Sprintf(`{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"},"page":{"limit":10,"token":%q}}`, page)
			rec := serve(b, s, http.MethodPost, searchBenchPath, tok, body, http.StatusOK)
			var got azSearchAnswer
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got.Results) != 10 || got.Page.NextToken == "" {
				b.Fatalf("not a middle page of 10: %v: %.300s", err, rec.Body)
			}
			for b.Loop() {
				serve(b, s, http.MethodPost, searchBenchPath, tok, body, http.StatusOK)
			}
		})
	}
}

// middleUserID returns the id in the middle of realm big's user ids.
func middleUserID(tb testing.TB, s *Server) string {
	var ids []string
	err := s.store.Read("big", func(rm *store.Realm) error {
		ids = slices.Collect(rm.UserIDsAfter(""))
		return nil
	})
	if err != nil || len(ids) == 0 {
		tb.Fatalf("no users in realm big: %v", err)
	}
	return ids[len(ids)/2]
}
