package mockservertest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// ExampleStart shows the shape of an integration test: start the reference
// server for the test, mint a token, call it over HTTP. In a real test, t is
// the test's *testing.T and the server closes itself through t.Cleanup.
func ExampleStart() {
	t := &exampleT{}
	defer t.finish()

	srv := mockservertest.Start(t, mockserver.WithFixtureFile("../../examples/fixtures/acme.json"))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		srv.URL+"/realms/acme/authorization-decision-provider/authorize",
		strings.NewReader(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","delete"]}],"context":{}}`))
	if err != nil {
		t.Fatalf("%v", err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Token("acme", "bob"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%v", err)
	}
	fmt.Println(resp.StatusCode)
	fmt.Print(string(body))
	// Output:
	// 200
	// {"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"delete","status":"DENY"}]}
}

// exampleT stands in for the *testing.T a real test passes to Start: it
// runs cleanups at the end and turns a fatal error into a panic.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()                           {}
func (t *exampleT) Context() context.Context          { return context.Background() }
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (t *exampleT) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
