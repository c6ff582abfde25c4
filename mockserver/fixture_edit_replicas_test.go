package mockserver_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
)

// TestAFixtureEditMakesNoTokenAnotherUsers: replicas with one key seed and
// one shared store (-key-seed, -redis) serve each other's tokens, and a
// token's sub is the user's id, derived from the seed, the realm and the
// user's name. A replica started with the fixture edited (a user removed
// and a role added, as a rolling
// update of the fixture does) gives every remaining user her id, and
// nobody else anyone's: mallory's token, minted by the replica of the old
// fixture, names no user of the new one, which grants it nothing, never
// serves it as boss's (a-edge16b F1: the id came from the seed, the
// realm's name and the user's place alone, so the new replica handed
// mallory's id to boss, and her token got his GRANT); boss's token, his
// role listed after another now, is his at both (ids derived from the
// fixture's whole description refused it at the new replica).
func TestAFixtureEditMakesNoTokenAnotherUsers(t *testing.T) {
	store := &sharedStore{keys: map[string]time.Time{}}
	var replicas [2]atomic.Pointer[mockserver.Server]
	hs := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := 0
		if r.Header.Get("X-Replica") == "b" {
			i = 1
		}
		replicas[i].Load().ServeHTTP(w, r)
	}))
	fixture := func(roles []mockserver.FixtureRole, users ...mockserver.FixtureUser) mockserver.Fixture {
		return mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
			Name:  "acme",
			Roles: roles,
			Users: users,
			Clients: []mockserver.FixtureClient{{ClientID: "orders-api", Secret: "s",
				Resources:   []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"delete"}}},
				Permissions: []mockserver.FixturePermission{{Name: "chiefs delete", Resource: "orders", Scopes: []string{"delete"}, Roles: []string{"chief"}}}}},
		}}}
	}
	mallory := mockserver.FixtureUser{Username: "mallory", Password: "m"}
	boss := mockserver.FixtureUser{Username: "boss", Password: "b", Roles: []string{"chief"}}
	opts := func(f mockserver.Fixture) []mockserver.Option {
		return []mockserver.Option{mockserver.WithFixture(f), mockserver.WithKeySeed(keySeed),
			mockserver.WithReplayStore(store), mockserver.WithIssuer(hs.URL)}
	}
	chief := []mockserver.FixtureRole{{Name: "chief"}}
	a := testkit.Must(mockserver.New(opts(fixture(chief, mallory, boss))...))(t)
	// mallory removed from the fixture, a role added before boss's
	b := testkit.Must(mockserver.New(opts(fixture(append([]mockserver.FixtureRole{{Name: "clerk"}}, chief...), boss))...))(t)
	replicas[0].Store(a)
	replicas[1].Store(b)

	tok := testkit.Must(a.IssueToken("acme", "mallory"))(t)
	bossTok := testkit.Must(a.IssueToken("acme", "boss"))(t)
	decideAs := func(replica, tok string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL+authorizePath,
			strings.NewReader(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["delete"]}],"context":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("X-Replica", replica)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		sb.Write(buf[:n])
		return resp.StatusCode, sb.String()
	}
	decide := func(replica string) (int, string) { return decideAs(replica, tok) }
	st, body := decide("a")
	if strings.Contains(body, `"GRANT"`) {
		t.Fatalf("mallory granted at the replica that minted her token: %d %s", st, body)
	}
	st, body = decide("b")
	if strings.Contains(body, `"GRANT"`) {
		t.Errorf("mallory's token, served by the replica of the edited fixture, got a GRANT (boss's?): %d %s", st, body)
	}
	for _, replica := range []string{"a", "b"} {
		if st, body := decideAs(replica, bossTok); !strings.Contains(body, `"GRANT"`) {
			t.Errorf("boss's token, at replica %s, got no GRANT: %d %s", replica, st, body)
		}
	}
}

// TestAFixtureNameNotUTF8IsRefused: a Go Fixture whose names hold bytes
// that are not UTF-8 is refused, naming where, as a file fixture cannot
// hold them at all (a-fixture17 F1: "x\xff" and "x\xfe" were two users to
// the store and one, "x\ufffd", to every JSON text showing them: the
// description ids derived from then, and the tokens' names).
func TestAFixtureNameNotUTF8IsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		realm mockserver.FixtureRealm
		at    string
	}{
		{"a username", mockserver.FixtureRealm{Name: "acme", Users: []mockserver.FixtureUser{{Username: "ok"}, {Username: "x\xff"}}}, "fixture.realms[0].users[1].username"},
		{"a role's attribute", mockserver.FixtureRealm{Name: "acme", Roles: []mockserver.FixtureRole{{Name: "r", Attributes: map[string][]string{"k": {"\xfe"}}}}}, `fixture.realms[0].roles[0].attributes["k"][0]`},
		{"a realm", mockserver.FixtureRealm{Name: "ac\xc3me"}, "fixture.realms[0].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mockserver.New(mockserver.WithFixture(mockserver.Fixture{Realms: []mockserver.FixtureRealm{tc.realm}}))
			if err == nil || !strings.Contains(err.Error(), tc.at+" is not valid UTF-8") {
				t.Fatalf("New = %v, want an error naming %s", err, tc.at)
			}
		})
	}
}
