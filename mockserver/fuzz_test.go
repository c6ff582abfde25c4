package mockserver

// Run the fuzzer longer than its seeds (which every `go test` runs) with:
//
//	go test -run '^$' -fuzz '^FuzzDecisionBody$' -fuzztime 10m -parallel=1 ./mockserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzDecisionBody feeds arbitrary bodies to the decision endpoints with a
// valid token: the answer is always a JSON body with a status below 500,
// and a 200 always carries statuses the wire format allows.
func FuzzDecisionBody(f *testing.F) {
	s, err := New(WithIssuer("http://example.com"), es256Tokens, WithFixture(Fixture{Realms: []FixtureRealm{{
		Name:  "acme",
		Roles: []FixtureRole{{Name: "viewer"}},
		Users: []FixtureUser{{Username: "alice", Roles: []string{"viewer"}}},
		Clients: []FixtureClient{{ClientID: "orders-api", Secret: "s",
			Resources: []FixtureResource{{Name: "orders", Scopes: []string{"read", "write"}}},
			Permissions: []FixturePermission{{Name: "p", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
				{Name: "m", Resource: "orders", Scopes: []string{"write"}, Roles: []string{"viewer"}, Methods: []string{"POST"}}}}},
		Organizations: []FixtureOrganization{{Name: "O", Alias: "o", Departments: []FixtureDepartment{{Name: "D", Users: []string{"alice"}}}}},
	}}}))
	if err != nil {
		f.Fatal(err)
	}
	tok, err := s.IssueToken("acme", "alice")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`,
		`{"clientId":"orders-api","resources":[{"name":"*"}],"context":{"attributes":{"method":"POST","headers":{"a":"b"}}}}`,
		`{"clientId":"orders-api","resources":[{"name":"ghost","scopes":["x","x"]},{"name":"orders"}]}`,
		`{"clientId":"orders-api","resources":[]}`,
		`{"clientId":"nope","resources":[{"name":"orders"}],"context":[]}`,
		`{"clientId":1}`, `[]`, `null`, ``, `{"resources":[{"scopes":null}]}`, `{"clientId":"orders-api"}{}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, orgs bool) {
		path := "/realms/acme/authorization-decision-provider/authorize"
		if orgs {
			path = "/realms/acme/authorization-decision-provider/get-organizations"
		}
		req := httptest.NewRequest(http.MethodPost, "http://example.com"+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		rec := serveFuzz(t, s, req)
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("status %d with a body that is not JSON: %q", rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK || orgs {
			return
		}
		var out authorizeResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		valid := map[string]bool{"GRANT": true, "DENY": true, "ERROR": true}
		if !valid[string(out.Status)] || len(out.Permissions) == 0 {
			t.Fatalf("bad answer %s", rec.Body)
		}
		for _, p := range out.Permissions {
			if !valid[string(p.Status)] {
				t.Fatalf("bad pair status in %s", rec.Body)
			}
		}
	})
}

// serveFuzz serves req with h and fails t on a 5xx answer or an exchange
// the OpenAPI document does not allow (traffic); the fuzz engine names
// the input.
func serveFuzz(t *testing.T, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	mark := traffic.Mark()
	h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("status %d for %s %s: %s", rec.Code, req.Method, req.URL, rec.Body)
	}
	if err := traffic.ErrSince(mark); err != nil {
		t.Fatal(err)
	}
	return rec
}
