package pep_test

// The gateway of this package's tests: the reference server (package
// mockserver) seeded with the shop fixture below, over real HTTP on
// loopback. Expected answers are worked out by hand from the fixture, never
// from the code under test.
//
// A thin middleware in front of the server records what reaches it (to check
// what the client put on the wire, and how many requests it sent) and, when
// a test sets a hook, lets the hook answer in the server's place. A hook is
// for the faults the reference server cannot make on demand: a given status,
// a malformed body, a request held open until the test lets it go. The
// faults it can make are asked of the server itself: every decision a 503
// or slow (configure), a 400 for an unknown client, a 404 for a path it does
// not serve, a 401 for an expired token, DPoP nonces.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// bulkClient is the shop's client with many resources, for batching.
const bulkClient = "bulk-api"

// shop is realm acme. Client orders-api has the resources orders (read,
// write, delete) and invoices (read, pay):
//
//	alice  role clerk: reads orders and invoices; assigned to Acme EU/Sales
//	       and Acme US/Ops (organizations that link no role)
//	bob    role editor: reads and writes orders
//	carol  no role of her own: reads orders through the role reader, which
//	       organization Acme Labs links, while she is assigned to Labs/Research
//	dave   nothing
//	ada    realm-admin, for the admin API
//
// Nobody may delete orders or pay invoices. Client bulk-api has the
// resources r00..r24 with the scopes s0..s9 each, of which clerks may use
// the even ones, and reports with the scopes s0..s59, all of which clerks
// may use.
var shop = func() mockserver.Fixture {
	bulk := mockserver.FixtureClient{ClientID: bulkClient, Secret: "bulk-secret"}
	for i := range 25 {
		name := fmt.Sprintf("r%02d", i)
		bulk.Resources = append(bulk.Resources, mockserver.FixtureResource{Name: name, Scopes: bulkScopes(10)})
		bulk.Permissions = append(bulk.Permissions, mockserver.FixturePermission{
			Name: "clerks use the even scopes of " + name, Resource: name,
			Scopes: []string{"s0", "s2", "s4", "s6", "s8"}, Roles: []string{"clerk"},
		})
	}
	bulk.Resources = append(bulk.Resources, mockserver.FixtureResource{Name: "reports", Scopes: bulkScopes(60)})
	bulk.Permissions = append(bulk.Permissions, mockserver.FixturePermission{
		Name: "clerks use reports", Resource: "reports", Scopes: bulkScopes(60), Roles: []string{"clerk"},
	})
	return mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:  testRealm,
		Roles: []mockserver.FixtureRole{{Name: "clerk"}, {Name: "editor"}, {Name: "reader"}},
		Users: []mockserver.FixtureUser{
			{Username: "alice", Roles: []string{"clerk"}},
			{Username: "bob", Roles: []string{"editor"}},
			{Username: "carol"},
			{Username: "dave"},
			{Username: "ada", Roles: []string{"realm-admin"}},
		},
		Clients: []mockserver.FixtureClient{{
			ClientID: testClient, Secret: "orders-secret",
			Resources: []mockserver.FixtureResource{
				{Name: "orders", Scopes: []string{"read", "write", "delete"}},
				{Name: "invoices", Scopes: []string{"read", "pay"}},
			},
			Permissions: []mockserver.FixturePermission{
				{Name: "clerks read orders", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"clerk"}},
				{Name: "clerks read invoices", Resource: "invoices", Scopes: []string{"read"}, Roles: []string{"clerk"}},
				{Name: "editors read and write orders", Resource: "orders", Scopes: []string{"read", "write"}, Roles: []string{"editor"}},
				{Name: "readers read orders", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"reader"}},
			},
		}, bulk},
		Organizations: []mockserver.FixtureOrganization{
			{Name: "Acme EU", Alias: "eu", Departments: []mockserver.FixtureDepartment{
				{Name: "Sales", Alias: "sales", Users: []string{"alice"}},
			}},
			{Name: "Acme US", Alias: "us", Departments: []mockserver.FixtureDepartment{
				{Name: "Ops", Alias: "ops", Users: []string{"alice"}},
			}},
			{Name: "Acme Labs", Alias: "labs", Roles: []string{"reader"}, Departments: []mockserver.FixtureDepartment{
				{Name: "Research", Alias: "research", Users: []string{"carol"}},
			}},
		},
	}}}
}()

// bulkScopes returns s0..s(n-1).
func bulkScopes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("s", i)
	}
	return out
}

// reference is a running reference server with the shop fixture, on a
// loopback server of internal/gatewaytest.
type reference struct {
	*gatewaytest.Server
	srv *mockserver.Server
	// clock is the server's: it decides when tokens expire.
	clock *shiftedClock
	// closing is closed before the server shuts down, to free hooks that a
	// test left blocked.
	closing chan struct{}

	mu       sync.Mutex
	requests []sentRequest
	hook     gwHook
}

// sentRequest is a request that reached the server, and how it was answered.
type sentRequest struct {
	Method        string
	Path          string
	ContentType   string
	Authorization string
	Header        http.Header
	Body          sentBody // decoded JSON body (authorize or get-organizations)

	Status int         // of the answer
	Answer http.Header // of the answer
}

type sentBody struct {
	ClientID  string `json:"clientId"`
	Resources []struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	} `json:"resources"`
	Context map[string]any `json:"context"`
}

// pairs lists the requested pairs as "resource/scope" ("resource/*" for an
// empty scope list), in request order.
func (r sentRequest) pairs() []string {
	var out []string
	for _, res := range r.Body.Resources {
		if len(res.Scopes) == 0 {
			out = append(out, res.Name+"/*")
		}
		for _, s := range res.Scopes {
			out = append(out, res.Name+"/"+s)
		}
	}
	return out
}

// shiftedClock is real time moved on by whatever a test adds.
type shiftedClock struct{ offset atomic.Int64 }

func (c *shiftedClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *shiftedClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// es256Tokens makes a test's reference server sign its access tokens ES256,
// with the P-256 key every realm has from the start, instead of RS256 (the
// default, as Keycloak's) with a 2048-bit RSA key the realm makes on its
// first token: 70 to 110 ms of CPU under -race for each server, which,
// over the few hundred servers these tests start, was a fifth of the
// package's CPU. The client never looks inside the token, so no test that
// uses it is about the algorithm; TestE2EEveryCall runs on the default server,
// RS256, as users' servers do. Each server still makes keys of its own: a
// key shared between servers would make one accept another's tokens.
var es256Tokens = mockserver.WithAccessTokenAlgorithm("ES256")

// startReference starts a reference server with the shop fixture on a
// loopback port until the test ends; it signs access tokens ES256
// (es256Tokens).
func startReference(t testing.TB) *reference {
	t.Helper()
	g := &reference{clock: &shiftedClock{}, closing: make(chan struct{})}
	gw, ln := gatewaytest.Listen(t)
	g.Server = gw
	srv, err := mockserver.New(mockserver.WithFixture(shop), mockserver.WithClock(g.clock.Now),
		mockserver.WithIssuer(g.URL), es256Tokens)
	if err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	g.srv = srv
	g.Serve(ln, http.HandlerFunc(g.serve))
	t.Cleanup(func() { close(g.closing) }) // runs before the server closes
	return g
}

// serve records a request, then lets the hook or the reference server answer
// it. The admin API is neither recorded nor hooked: only the tests use it.
func (g *reference) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/admin/") {
		g.srv.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	rec := sentRequest{
		Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"),
		Authorization: r.Header.Get("Authorization"), Header: r.Header.Clone(),
	}
	_ = json.Unmarshal(body, &rec.Body)
	g.mu.Lock()
	g.requests = append(g.requests, rec)
	n, hook := len(g.requests), g.hook
	g.mu.Unlock()
	aw := &answerRecorder{ResponseWriter: w, g: g, i: n - 1}
	if hook != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if hook(aw, r, n) {
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	g.srv.ServeHTTP(aw, r)
}

// answerRecorder notes the status and header of an answer as they are sent.
type answerRecorder struct {
	http.ResponseWriter
	g     *reference
	i     int
	wrote bool
}

func (a *answerRecorder) WriteHeader(status int) {
	if !a.wrote {
		a.wrote = true
		a.g.mu.Lock()
		a.g.requests[a.i].Status, a.g.requests[a.i].Answer = status, a.Header().Clone()
		a.g.mu.Unlock()
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *answerRecorder) Write(b []byte) (int, error) {
	if !a.wrote {
		a.WriteHeader(http.StatusOK)
	}
	return a.ResponseWriter.Write(b)
}

func (a *answerRecorder) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// setHook makes h answer requests in the server's place when it chooses to;
// nil hands every request back to the server.
func (g *reference) setHook(h gwHook) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hook = h
}

// count returns how many requests reached the server.
func (g *reference) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.requests)
}

// received returns a copy of the requests so far.
func (g *reference) received() []sentRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]sentRequest(nil), g.requests...)
}

// posts returns the POST requests so far (Verify also asks the realm's
// discovery document).
func (g *reference) posts() []sentRequest {
	var out []sentRequest
	for _, r := range g.received() {
		if r.Method == http.MethodPost {
			out = append(out, r)
		}
	}
	return out
}

// last returns the latest request; the test fails if there is none.
func (g *reference) last(t testing.TB) sentRequest {
	t.Helper()
	rs := g.received()
	require.NotEmpty(t, rs, "the server received no request")
	return rs[len(rs)-1]
}

// token mints an access token of user.
func (g *reference) token(t testing.TB, user string, opts ...mockserver.TokenOption) string {
	t.Helper()
	return testkit.Must(g.srv.IssueToken(testRealm, user, opts...))(t)
}

// expiredToken mints an access token of user that expired a minute ago.
func (g *reference) expiredToken(t testing.TB, user string) string {
	t.Helper()
	return g.token(t, user, mockserver.TokenLifetime(-time.Minute))
}

// startWithAlice starts a reference server and a client of it holding
// alice's token.
func startWithAlice(t testing.TB) (*reference, *pep.Client) {
	g := startReference(t)
	c := g.newClient(t)
	c.SetToken(g.token(t, "alice"))
	return g, c
}

// newClient returns an orders-api client using the server's own
// *http.Client, so that its connections close with the server, with
// hangguard.Timeout and then opts, closed when the test ends.
func (g *reference) newClient(t testing.TB, opts ...pep.Option) *pep.Client {
	t.Helper()
	return g.newClientOf(t, testClient, opts...)
}

// newClientOf is newClient for another client ID.
func (g *reference) newClientOf(t testing.TB, clientID string, opts ...pep.Option) *pep.Client {
	t.Helper()
	return mustPep(t, g.URL, testRealm, clientID, append([]pep.Option{pep.WithHTTPClient(g.Client())}, opts...)...)
}

// dpopClient returns an orders-api client holding a token of user, minted
// with tokenOpts and bound to a new DPoP key, the recorder of its events,
// and the token.
func (g *reference) dpopClient(t *testing.T, user string, tokenOpts []mockserver.TokenOption, opts ...pep.Option) (*pep.Client, *recorder, string) {
	t.Helper()
	signer := testkit.Must(dpop.GenerateKey())(t)
	tok := g.token(t, user, append(tokenOpts, mockserver.TokenDPoPBinding(signer.Thumbprint()))...)
	rec := &recorder{}
	c := g.newClient(t, append([]pep.Option{pep.WithEventHandler(rec.handle)}, opts...)...)
	c.SetDPoPToken(tok, signer)
	return c, rec, tok
}

// admin sends a request to the server's admin API with token and returns
// the answer, which the test's cleanup closes.
func (g *reference) admin(t *testing.T, method, path, token, body string) *http.Response {
	t.Helper()
	req := testkit.Must(http.NewRequestWithContext(t.Context(), method, g.URL+path, strings.NewReader(body)))(t)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp := testkit.Must(g.Client().Do(req))(t)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// everyDecisionFails is the server configuration that answers every
// decision call with a 503.
const everyDecisionFails = `{"decisionFailureRate": 1}`

// configure replaces the server's platform configuration (PUT
// /admin/config), e.g. everyDecisionFails.
func (g *reference) configure(t *testing.T, config string) {
	t.Helper()
	admin := testkit.Must(g.srv.IssueToken("master", "service-account-platform-admin"))(t)
	resp := g.admin(t, http.MethodPut, "/admin/config", admin, config)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// assignment is a department assignment of a user, as the admin API lists it.
type assignment struct {
	UserID           string
	OrganizationID   string
	OrganizationName string
	DepartmentID     string
	DepartmentName   string
}

// assignments lists user's department assignments through the admin API.
func (g *reference) assignments(t *testing.T, user string) []assignment {
	t.Helper()
	var list struct{ Results []assignment }
	path := "/admin/realms/acme/organizations/users/" + subject(t, g.token(t, user)) + "/assignments"
	decode(t, g.admin(t, http.MethodGet, path, g.token(t, "ada"), ""), &list)
	return list.Results
}

// unassign removes every department assignment of user, so that the roles
// its organizations link no longer count for it.
func (g *reference) unassign(t *testing.T, user string) {
	t.Helper()
	as := g.assignments(t, user)
	require.NotEmpty(t, as)
	for _, a := range as {
		resp := g.admin(t, http.MethodDelete, "/admin/realms/acme/organizations/"+a.OrganizationID+
			"/departments/"+a.DepartmentID+"/users/"+a.UserID, g.token(t, "ada"), "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
}
