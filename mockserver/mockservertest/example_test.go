package mockservertest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// ExampleStart shows the shape of an integration test: start the reference
// server for the test, mint a token, call it over HTTP. (It is compiled, not
// run: Start needs the test's testing.TB.)
func ExampleStart() {
	var t testing.TB // the test's *testing.T

	srv := mockservertest.Start(t, mockserver.WithFixtureFile("examples/fixtures/acme.json"))
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost,
		srv.URL+"/realms/acme/authorization-decision-provider/authorize",
		strings.NewReader(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`))
	req.Header.Set("Authorization", "Bearer "+srv.Token("acme", "bob"))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.StatusCode)
}
