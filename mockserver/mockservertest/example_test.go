package mockservertest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// Example is a consumer's integration test to copy: the reference server
// with a fixture, a user who may and one who may not, a DPoP-bound token,
// and the gateway down. The client's cache is off, as it should be in
// such tests: a GRANT cached in the last 30 s (the default) would answer
// while the gateway is down. In a real test, t is the test's *testing.T
// and the server closes itself through t.Cleanup.
func Example() {
	t := &exampleT{}
	defer t.finish()

	gw := mockservertest.Start(t, mockserver.WithFixtureFile("../../examples/fixtures/acme.json"))
	client, err := pep.New(gw.URL, "acme", "orders-api",
		pep.WithCache(0, 0, 0),       // no cached answer stands in for the gateway
		pep.WithRetry(0, 0, 0),       // an outage fails at once
		pep.WithTimeout(time.Minute)) // tests share a busy machine: the 2 s default could cut a call
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = client.Close() }) // no connection outlives the test

	// Per-call tokens, as the middleware forwards each caller's.
	for _, user := range []string{"bob", "erin"} {
		ctx := pep.WithToken(t.Context(), gw.Token("acme", user))
		d, err := client.Check(ctx, "orders", "read")
		if err != nil {
			t.Fatalf("%v", err)
		}
		fmt.Printf("%s may read orders: %t\n", user, d.Allowed())
	}

	// A DPoP-bound token: the server binds it to the key's thumbprint and
	// checks every request's proof against it.
	signer, err := dpop.GenerateKey()
	if err != nil {
		t.Fatalf("%v", err)
	}
	client.SetDPoPToken(gw.Token("acme", "bob", mockserver.TokenDPoPBinding(signer.Thumbprint())), signer)
	d, err := client.Check(t.Context(), "orders", "read")
	if err != nil {
		t.Fatalf("%v", err)
	}
	fmt.Println("bob, DPoP-bound:", d.Status)

	// The gateway down: the call fails closed, with a Cause and no error.
	gw.Stop()
	d, err = client.Check(t.Context(), "orders", "read")
	if err != nil {
		t.Fatalf("%v", err)
	}
	fmt.Printf("gateway down: %s (unavailable: %t)\n", d.Status, errors.Is(d.Cause, pep.ErrUnavailable))
	// Output:
	// bob may read orders: true
	// erin may read orders: false
	// bob, DPoP-bound: GRANT
	// gateway down: DENY (unavailable: true)
}

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

// ExampleServer_Stop shows a test of what a service does while its
// gateway is down: Stop makes the server unreachable, Restart brings it
// back on the same URL with the same state, so the client needs nothing
// new.
func ExampleServer_Stop() {
	t := &exampleT{}
	defer t.finish()

	gw := mockservertest.Start(t, mockserver.WithFixtureFile("../../examples/fixtures/acme.json"))
	client, err := pep.New(gw.URL, "acme", "orders-api", pep.WithRetry(0, 0, 0), pep.WithBreaker(0, 0),
		pep.WithTimeout(time.Minute)) // tests share a busy machine: the 2 s default could cut a call
	if err != nil {
		t.Fatalf("%v", err)
	}
	client.SetToken(gw.Token("acme", "bob"))
	show := func(when string) {
		d, err := client.Check(t.Context(), "orders", "read", pep.NoCache())
		if err != nil {
			t.Fatalf("%v", err)
		}
		fmt.Printf("%s: %s (gateway unavailable: %t)\n", when, d.Status, errors.Is(d.Cause, pep.ErrUnavailable))
	}

	show("running")
	gw.Stop()
	show("stopped")
	gw.Restart()
	show("restarted")
	// Output:
	// running: GRANT (gateway unavailable: false)
	// stopped: DENY (gateway unavailable: true)
	// restarted: GRANT (gateway unavailable: false)
}

// ExampleServer_SetFaults shows fault injection: with a failure rate of 1
// every decision call answers 503, and the client fails closed; the zero
// Faults turns injection off again.
func ExampleServer_SetFaults() {
	t := &exampleT{}
	defer t.finish()

	gw := mockservertest.Start(t, mockserver.WithFixtureFile("../../examples/fixtures/acme.json"))
	client, err := pep.New(gw.URL, "acme", "orders-api", pep.WithRetry(0, 0, 0), pep.WithBreaker(0, 0),
		pep.WithTimeout(time.Minute)) // tests share a busy machine: the 2 s default could cut a call
	if err != nil {
		t.Fatalf("%v", err)
	}
	client.SetToken(gw.Token("acme", "bob"))

	gw.SetFaults(mockservertest.Faults{DecisionFailureRate: 1})
	d, _ := client.Check(t.Context(), "orders", "read")
	fmt.Println(d.Status, d.Cause)

	cfg := gw.SetFaults(mockservertest.Faults{})
	d, _ = client.Check(t.Context(), "orders", "read")
	fmt.Println(d.Status, d.Cause, cfg.DecisionFailureRate)
	// Output:
	// DENY pep: gateway answered 503 Service Unavailable: injected decision failure (decisionFailureRate 1)
	// GRANT <nil> 0
}

// ExampleServer_Revoke shows a test of a revoked token: Revoke revokes it
// as the client it was issued to (orders-api, with its secret), and the
// gateway refuses it from then on.
func ExampleServer_Revoke() {
	t := &exampleT{}
	defer t.finish()

	gw := mockservertest.Start(t, mockserver.WithFixtureFile("../../examples/fixtures/acme.json"))
	client, err := pep.New(gw.URL, "acme", "orders-api", pep.WithRetry(0, 0, 0),
		pep.WithTimeout(time.Minute)) // tests share a busy machine: the 2 s default could cut a call
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	tok := gw.Token("acme", "bob", mockserver.TokenClient("orders-api"))
	client.SetToken(tok)
	d, _ := client.Check(t.Context(), "orders", "read")
	fmt.Println(d.Status)

	gw.Revoke(t, "acme", "orders-api", "orders-secret", tok)
	d, _ = client.Check(t.Context(), "orders", "read", pep.NoCache())
	fmt.Println(d.Status, errors.Is(d.Cause, pep.ErrUnauthorized))
	// Output:
	// GRANT
	// DENY true
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
