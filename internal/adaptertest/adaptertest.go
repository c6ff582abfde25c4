// Package adaptertest is the one table of hostile callers that every
// framework adapter of orgauthz (middleware, grpcpep, ginpep, echopep) must
// answer alike, with the reference server and the pep clients it is run
// against.
//
// A test of an adapter protects three operations of its framework:
//
//   - "read", mapped to the resource orders with the scope read, which ann
//     holds and ben does not;
//   - "write", mapped to orders with write, which nobody holds;
//   - "unmapped", served by the framework but named by no entry of the
//     adapter's map, which must be refused without a gateway call.
//
// It then sends each Case's authorization values to the operation the case
// names, through the framework's own client or over HTTP, on a loopback
// server, and checks that the answer falls in the case's Outcome class.
// The package is internal to the module path github.com/orgauthz/orgauthz,
// so the nested adapter modules import it; it needs nothing but the root
// module.
package adaptertest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// Outcome is the class of answer a case must get.
type Outcome int

// The outcome classes, with the HTTP status and the gRPC code of each.
const (
	// Granted: the protected handler runs (200, OK).
	Granted Outcome = iota
	// BadRequest: the request is refused before any token is read, as
	// ambiguous (400, InvalidArgument).
	BadRequest
	// Unauthenticated: no usable token, or one the gateway refused (401
	// with WWW-Authenticate, Unauthenticated).
	Unauthenticated
	// Denied: the gateway said no, or there was nothing to ask it (403,
	// PermissionDenied).
	Denied
	// Unavailable: no decision could be had, and the adapter was set to
	// say so (503 with ServiceUnavailable, Unavailable).
	Unavailable
)

// String names the class.
func (o Outcome) String() string {
	switch o {
	case Granted:
		return "Granted"
	case BadRequest:
		return "BadRequest"
	case Unauthenticated:
		return "Unauthenticated"
	case Denied:
		return "Denied"
	case Unavailable:
		return "Unavailable"
	}
	return "Outcome(?)"
}

// HTTPStatus is the status an HTTP adapter answers the class with.
func (o Outcome) HTTPStatus() int {
	switch o {
	case Granted:
		return http.StatusOK
	case BadRequest:
		return http.StatusBadRequest
	case Unauthenticated:
		return http.StatusUnauthorized
	case Denied:
		return http.StatusForbidden
	case Unavailable:
		return http.StatusServiceUnavailable
	}
	return 0
}

// The operations of the table.
const (
	OpRead     = "read"
	OpWrite    = "write"
	OpUnmapped = "unmapped"
)

// Operations maps the operations an adapter's map names to the resource
// and scopes it checks; OpUnmapped is deliberately absent.
var Operations = map[string]pep.Resource{
	OpRead:  {Name: "orders", Scopes: []string{"read"}},
	OpWrite: {Name: "orders", Scopes: []string{"write"}},
}

// HugeToken is a well-formed token longer than the pep client's default
// WithMaxTokenBytes (16 KiB) but well within every framework's header
// limits (net/http's 1 MB, grpc-go's 16 MB).
var HugeToken = strings.Repeat("a", 64<<10)

// Case is one hostile (or honest) caller.
type Case struct {
	Name string
	// Authorization are the values of the caller's authorization header
	// (HTTP) or metadata (gRPC), in order; none means the caller sends
	// none. "{ann}", "{ben}" and "{forged}" stand for a valid token of
	// ann, of ben, and for ann's token with its signature altered.
	Authorization []string
	// Operation is the operation called (OpRead, OpWrite, OpUnmapped).
	Operation string
	// Outage runs the case against an adapter whose gateway is down.
	Outage bool
	// Want is the class of answer.
	Want Outcome
	// Asks reports whether the adapter asks its Checker (false: it must
	// answer without a call). A huge token is passed on: the pep client
	// refuses to send it (pep.ErrNoToken), which is the caller's 401.
	Asks bool
}

// Values returns the case's authorization values with the placeholders
// replaced from tokens (as Env.Tokens gives them).
func (c Case) Values(tokens map[string]string) []string {
	out := make([]string, len(c.Authorization))
	for i, v := range c.Authorization {
		for name, tok := range tokens {
			v = strings.ReplaceAll(v, "{"+name+"}", tok)
		}
		out[i] = v
	}
	return out
}

// Cases returns the table: a new slice on every call.
func Cases() []Case {
	return []Case{
		{Name: "a viewer reads", Authorization: []string{"Bearer {ann}"}, Operation: OpRead, Want: Granted, Asks: true},
		{Name: "the scheme is case-insensitive", Authorization: []string{"bEaReR {ann}"}, Operation: OpRead, Want: Granted, Asks: true},
		{Name: "spaces after the scheme", Authorization: []string{"Bearer   {ann}"}, Operation: OpRead, Want: Granted, Asks: true},
		{Name: "no authorization", Operation: OpRead, Want: Unauthenticated},
		{Name: "a Basic credential", Authorization: []string{"Basic YW5uOnB3"}, Operation: OpRead, Want: Unauthenticated},
		{Name: "a DPoP scheme", Authorization: []string{"DPoP {ann}"}, Operation: OpRead, Want: Unauthenticated},
		{Name: "the scheme alone", Authorization: []string{"Bearer"}, Operation: OpRead, Want: Unauthenticated},
		{Name: "an empty value", Authorization: []string{""}, Operation: OpRead, Want: Unauthenticated},
		{Name: "padding inside the token", Authorization: []string{"Bearer {ann}=x"}, Operation: OpRead, Want: Unauthenticated},
		{Name: "a token with a space", Authorization: []string{"Bearer {ann} x"}, Operation: OpRead, Want: Unauthenticated},
		{Name: "two tokens in one value", Authorization: []string{"Bearer {ann},Bearer {ben}"}, Operation: OpRead, Want: Unauthenticated},
		{Name: "a token of padding only", Authorization: []string{"Bearer =="}, Operation: OpRead, Want: Unauthenticated},
		{Name: "a token with a quote", Authorization: []string{`Bearer "{ann}"`}, Operation: OpRead, Want: Unauthenticated},
		{Name: "a huge token", Authorization: []string{"Bearer " + HugeToken}, Operation: OpRead, Want: Unauthenticated, Asks: true},
		{Name: "a forged token", Authorization: []string{"Bearer {forged}"}, Operation: OpRead, Want: Unauthenticated, Asks: true},
		{Name: "two authorization values", Authorization: []string{"Bearer {ann}", "Bearer {ann}"}, Operation: OpRead, Want: BadRequest},
		{Name: "two values, the second another user's", Authorization: []string{"Bearer {ben}", "Bearer {ann}"}, Operation: OpRead, Want: BadRequest},
		{Name: "two values, one empty", Authorization: []string{"Bearer {ann}", ""}, Operation: OpRead, Want: BadRequest},
		{Name: "a user without the scope", Authorization: []string{"Bearer {ben}"}, Operation: OpRead, Want: Denied, Asks: true},
		{Name: "a scope nobody holds", Authorization: []string{"Bearer {ann}"}, Operation: OpWrite, Want: Denied, Asks: true},
		{Name: "an operation the map does not name", Authorization: []string{"Bearer {ann}"}, Operation: OpUnmapped, Want: Denied},
		{Name: "the gateway is down", Authorization: []string{"Bearer {ann}"}, Operation: OpRead, Outage: true, Want: Unavailable, Asks: true},
		{Name: "no token while the gateway is down", Operation: OpRead, Outage: true, Want: Unauthenticated},
	}
}

// Fixture is the realm the table runs in: ann is a viewer, who may read
// orders; ben has no role; nobody may write orders.
var Fixture = mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
	Name:  Realm,
	Roles: []mockserver.FixtureRole{{Name: "viewer"}},
	Users: []mockserver.FixtureUser{
		{Username: "ann", Roles: []string{"viewer"}},
		{Username: "ben"},
	},
	Clients: []mockserver.FixtureClient{{
		ClientID: ClientID, Secret: "s3cret",
		Resources: []mockserver.FixtureResource{
			{Name: "orders", Scopes: []string{"read", "write"}},
		},
		Permissions: []mockserver.FixturePermission{
			{Name: "viewers read", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
		},
	}},
}}}

// The realm and client of Fixture.
const (
	Realm    = "shop"
	ClientID = "orders-api"
)

// ES256Tokens is the option that makes a test's reference server sign
// access tokens ES256 (see Start), for the adapters' own tests that start
// servers of their own.
var ES256Tokens = mockserver.WithAccessTokenAlgorithm("ES256")

// Env is a reference server with Fixture, a client of it, and a client of a
// gateway that is down.
type Env struct {
	Gateway *mockservertest.Server
	// Client asks Gateway; Down asks a gateway that was stopped.
	Client, Down *pep.Client
	// Tokens are the values of the placeholders of Case.Authorization.
	Tokens map[string]string
}

// Start starts an Env for t; everything stops when t ends. Its servers sign
// access tokens ES256, with the P-256 key every realm has from the start,
// rather than RS256 (the default) with a 2048-bit RSA key made on the
// realm's first token, 70 to 110 ms of CPU under -race per server: an
// adapter never looks inside the token. Each server still makes keys of its
// own (shared keys would make one accept another's tokens).
func Start(t testing.TB) *Env {
	t.Helper()
	gw := mockservertest.Start(t, mockserver.WithFixture(Fixture), ES256Tokens)
	down := mockservertest.Start(t, mockserver.WithFixture(Fixture), ES256Tokens)
	down.Stop()
	client, err := newClient(gw.URL)
	if err != nil {
		t.Fatal(err)
	}
	// No retries, so that an outage is met at once.
	downClient, err := newClient(down.URL, pep.WithRetry(0, time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.Close()
		_ = downClient.Close()
	})
	ann := gw.Token(Realm, "ann")
	return &Env{
		Gateway: gw, Client: client, Down: downClient,
		Tokens: map[string]string{
			"ann":    ann,
			"ben":    gw.Token(Realm, "ben"),
			"forged": ann[:len(ann)-4] + "AAAA",
		},
	}
}

// newClient is pep.New for Realm and ClientID at gateway, with the hang
// guard (hangguard.Timeout) before opts: a clean call of an adapter's test
// on a loaded machine can overrun the 2 s production default and then fail
// closed, an Unavailable where the case wants another class.
func newClient(gateway string, opts ...pep.Option) (*pep.Client, error) {
	return pep.New(gateway, Realm, ClientID, append([]pep.Option{pep.WithTimeout(hangguard.Timeout)}, opts...)...)
}

// CheckerFor returns the checker a case's adapter is built with: a
// Counter of Down for an outage, of Client otherwise.
func (e *Env) CheckerFor(c Case) *Counter {
	if c.Outage {
		return &Counter{Checker: e.Down}
	}
	return &Counter{Checker: e.Client}
}

// Checker is what every adapter asks (*pep.Client satisfies it).
type Checker interface {
	CheckMany(ctx context.Context, resources []pep.Resource, opts ...pep.CallOption) (pep.Result, error)
}

// Counter is a Checker that counts the calls it passes on to Checker.
type Counter struct {
	Checker Checker
	n       atomic.Int64
}

// CheckMany counts the call and passes it on.
func (c *Counter) CheckMany(ctx context.Context, resources []pep.Resource, opts ...pep.CallOption) (pep.Result, error) {
	c.n.Add(1)
	return c.Checker.CheckMany(ctx, resources, opts...)
}

// Calls is the number of calls so far.
func (c *Counter) Calls() int64 { return c.n.Load() }

// Granter is a Checker that grants every pair it is asked about, for the
// adapters' tests of wiring and method overrides, where the decision is not
// what is under test.
type Granter struct{}

// CheckMany grants every scope of every resource.
func (Granter) CheckMany(_ context.Context, resources []pep.Resource, _ ...pep.CallOption) (pep.Result, error) {
	res := pep.Result{Status: pep.Grant}
	for _, r := range resources {
		for _, s := range r.Scopes {
			res.Decisions = append(res.Decisions, pep.Decision{Resource: r.Name, Scope: s, Status: pep.Grant})
		}
	}
	return res, nil
}

// Mistake is a wiring mistake of an adapter: build must panic with a value
// whose text contains Says.
type Mistake struct {
	Name  string
	Build func()
	Says  string
}

// RunMistakes runs each mistake's Build in a subtest of its own and checks
// that it panics saying what to fix.
func RunMistakes(t *testing.T, mistakes []Mistake) {
	t.Helper()
	for _, m := range mistakes {
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if s := fmt.Sprint(r); !strings.Contains(s, m.Says) {
					t.Errorf("the panic %q does not say %q", s, m.Says)
				}
			}()
			m.Build()
		})
	}
}
