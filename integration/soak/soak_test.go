package soak_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

var (
	soakDuration = flag.Duration("soak.duration", 3*time.Second, "how long TestSoak sends load")
	soakWorkers  = flag.Int("soak.workers", 16, "how many concurrent writers TestSoak runs in the realm under test")
	soakUsers    = flag.Int("soak.users", 10_000, "how many users the realm under test holds")
)

const (
	soakRealm  = "acme"
	soakClient = "orders-api"
	// soakActive is how many of acme's users hold a token in the soak (the
	// others only make the realm large): minting a token costs a
	// millisecond under the race detector.
	soakActive = 64
	// soakNoisyRealm is the second tenant, written to by soakNoisyWorkers
	// writers with its own admin, among soakNoisyUsers users.
	soakNoisyRealm   = "noisy"
	soakNoisyWorkers = 4
	soakNoisyUsers   = 16
	// soakDeciders ask for decisions with the active users' tokens, each
	// through its own cached client; soakJunkCallers send refused tokens.
	soakDeciders    = 4
	soakJunkCallers = 2
	// soakMaxLiveOrgs bounds the organizations a worker keeps at once.
	soakMaxLiveOrgs = 4
	// soakMaxDepth bounds the department trees the workers grow.
	soakMaxDepth = 4
	// soakMaxAliasReuse bounds how many deleted organizations' aliases the
	// check takes again (each is a write; the first ones are enough to
	// show that deletes free the alias index).
	soakMaxAliasReuse = 1000
)

// es256Tokens makes a test's reference server sign access tokens ES256,
// with the P-256 key every realm has from the start, rather than RS256 (the
// default, as Keycloak's) with a 2048-bit RSA key made on the realm's first
// token, 70 to 110 ms of CPU under -race per server, and an RSA signature
// per token. The soak is about load, not the token's algorithm; integration/interop proves the default with OpenID Connect
// libraries. Each server still makes keys of its own: a key shared between
// servers would make one accept another's tokens.
var es256Tokens = mockserver.WithAccessTokenAlgorithm("ES256")

// soakFixture: realm acme holds users u0..u(users-1), of whom the even ones
// are viewers, who may read orders and invoices; nobody may write or pay.
// No role is linked to an organization, so the organization writes of the
// soak never change a decision: every decision has one right answer. Realm
// noisy holds n0..n(soakNoisyUsers-1) and its admin; its writers never touch
// acme.
func soakFixture(users int) mockserver.Fixture {
	acme := []mockserver.FixtureUser{{Username: "admin", Roles: []string{"realm-admin"}}}
	for i := range users {
		u := mockserver.FixtureUser{Username: fmt.Sprint("u", i)}
		if i%2 == 0 {
			u.Roles = []string{"viewer"}
		}
		acme = append(acme, u)
	}
	noisy := []mockserver.FixtureUser{{Username: "admin", Roles: []string{"realm-admin"}}}
	for i := range soakNoisyUsers {
		noisy = append(noisy, mockserver.FixtureUser{Username: fmt.Sprint("n", i)})
	}
	return mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:  soakRealm,
		Roles: []mockserver.FixtureRole{{Name: "viewer"}},
		Users: acme,
		Clients: []mockserver.FixtureClient{{
			ClientID: soakClient, Secret: "orders-secret",
			Resources: []mockserver.FixtureResource{
				{Name: "orders", Scopes: []string{"read", "write"}},
				{Name: "invoices", Scopes: []string{"read", "pay"}},
			},
			Permissions: []mockserver.FixturePermission{
				{Name: "viewers read orders", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
				{Name: "viewers read invoices", Resource: "invoices", Scopes: []string{"read"}, Roles: []string{"viewer"}},
			},
		}},
	}, {
		Name:  soakNoisyRealm,
		Users: noisy,
	}}}
}

// soakAsk is what the decision calls ask; soakWant is the answer for a
// viewer (a non-viewer is denied every pair).
var (
	soakAsk = []pep.Resource{
		{Name: "orders", Scopes: []string{"read", "write"}},
		{Name: "invoices", Scopes: []string{"read", "pay"}},
	}
	soakWant = map[string]pep.Status{
		"orders/read": pep.Grant, "orders/write": pep.Deny, "invoices/read": pep.Grant, "invoices/pay": pep.Deny,
	}
)

// soakCounter counts every HTTP exchange of the soak, API and pep alike,
// and remembers the 5xx answers. A transport failure is the restart's doing
// when the gateway was down as the request started or failed, or when the
// request went out on a connection made before the restart (the stopped
// server closed it; the client had not noticed yet). Any other is counted
// apart, and the first few are kept.
type soakCounter struct {
	base       http.RoundTripper
	env        *soakEnv
	requests   atomic.Int64
	failures   atomic.Int64 // transport errors, the restart's included
	unexpected atomic.Int64 // transport errors that are not the restart's
	mu         sync.Mutex
	serverErrs []string
	oddErrs    []string
}

// soakConn is a connection that knows how many restarts had completed when
// it was made.
type soakConn struct {
	net.Conn
	restarts int64
}

// dial makes the counter's connections, marked with their generation.
func (c *soakCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	restarts := c.env.restarts.Load()
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &soakConn{Conn: conn, restarts: restarts}, nil
}

func (c *soakCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	method, path := r.Method, r.URL.Path
	downBefore := c.env.down.Load()
	connRestarts := int64(-1)
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if sc, ok := info.Conn.(*soakConn); ok {
				connRestarts = sc.restarts
			}
		},
	}))
	resp, err := c.base.RoundTrip(r)
	c.requests.Add(1)
	switch {
	case err != nil:
		c.failures.Add(1)
		stale := connRestarts >= 0 && connRestarts < c.env.restarts.Load()
		if stale {
			err = &staleConnError{err}
		}
		if !downBefore && !c.env.down.Load() && !stale {
			c.unexpected.Add(1)
			c.mu.Lock()
			if len(c.oddErrs) < 10 {
				c.oddErrs = append(c.oddErrs, fmt.Sprintf("%s %s (connection of generation %d): %v", method, path, connRestarts, err))
			}
			c.mu.Unlock()
		}
	case resp.StatusCode >= 500:
		c.mu.Lock()
		c.serverErrs = append(c.serverErrs, fmt.Sprintf("%s %s: %d", method, path, resp.StatusCode))
		c.mu.Unlock()
	}
	return resp, err
}

func (c *soakCounter) fiveXX() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.serverErrs)
}

// soakAPI calls the organization API of realm acme with the admin token.
type soakAPI struct {
	hc    *http.Client
	base  string // .../admin/realms/acme/organizations
	token string
}

// call sends method path (relative to the organizations base) with body as
// JSON and decodes the answer into out when it is not nil. It returns an
// error unless the status is want.
func (a *soakAPI) call(ctx context.Context, want int, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return &transportError{fmt.Errorf("%s %s: %w", method, path, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: %w: %s", method, path, err, data)
		}
	}
	return nil
}

// staleConnError is a request that went out on a connection the gateway
// closed when it stopped for its restart.
type staleConnError struct{ err error }

func (e *staleConnError) Error() string {
	return "on a connection closed by the restart: " + e.err.Error()
}
func (e *staleConnError) Unwrap() error { return e.err }

// transportError is an API call that got no answer. While the gateway
// restarts, such a write was not applied: the server stops gracefully, so
// every request it read is answered before its connection closes.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// idResult is the {"result": {"id": ...}} of a create.
type idResult struct {
	Result struct {
		ID       string `json:"id"`
		Alias    string `json:"alias"`
		ParentID string `json:"parentId"`
	} `json:"result"`
}

// soakOrg and soakDept are a worker's model of what it created; a worker
// only ever changes its own organizations, so the union of the models is
// exactly what the server must hold at the end.
type soakOrg struct {
	id, alias string
	deleted   bool
	depts     []*soakDept // every department ever created, deleted ones included
}

type soakDept struct {
	id       string
	org      *soakOrg
	parent   *soakDept // nil for a root department
	children []*soakDept
	depth    int
	users    map[string]bool // user ids assigned now
	deleted  bool
}

func (d *soakDept) parentID() string {
	if d.parent == nil {
		return d.org.id
	}
	return d.parent.id
}

// markDeleted marks d and its subtree deleted, as the server's cascade does.
func (d *soakDept) markDeleted() {
	d.deleted = true
	d.users = nil
	for _, c := range d.children {
		c.markDeleted()
	}
}

// soakTally counts what the workers did.
type soakTally struct {
	orgCreates, deptCreates, assigns, unassigns, deptDeletes, orgDeletes, reads atomic.Int64
	decisionCalls, decisionPairs, organizationsCalls                            atomic.Int64
	junkCalls, junkRefused                                                      atomic.Int64
	// gapRefusals counts API writes refused in transport while the gateway
	// was down (not applied, not in the model); gapDenials decisions and
	// gapErrors get-organizations calls that failed closed then.
	gapRefusals, gapDenials, gapErrors atomic.Int64
}

func (t *soakTally) writes() int64 {
	return t.orgCreates.Load() + t.deptCreates.Load() + t.assigns.Load() + t.unassigns.Load() +
		t.deptDeletes.Load() + t.orgDeletes.Load()
}

// soakWorker is one concurrent writer of a realm: organization writes with
// the realm admin's token and, in acme, get-organizations with its user's
// token.
type soakWorker struct {
	n       int
	rng     *rand.Rand
	api     *soakAPI
	client  *pep.Client // nil for the noisy tenant's writers
	userID  string      // the worker's user
	userIDs []string    // the realm's active users, for assignments
	tally   *soakTally
	orgs    []*soakOrg
	created int // for unique aliases

	env *soakEnv
	// apiGap and pepGap follow the worker's API calls and pep client
	// through the gateway's restart.
	apiGap, pepGap soakGap
}

// liveDepts is o's departments not deleted, in a new slice.
func liveDepts(o *soakOrg) []*soakDept {
	return slices.DeleteFunc(slices.Clone(o.depts), func(d *soakDept) bool { return d.deleted })
}

func pick[T any](rng *rand.Rand, list []T) T { return list[rng.IntN(len(list))] }

// step does one operation chosen at random. An API call that got no answer
// is tolerated only while the worker is in the restart's gap; it was not
// applied, and the model is left as it was.
func (w *soakWorker) step(ctx context.Context) error {
	restarted := w.env.restarts.Load()
	organizations, err := w.op(ctx)
	if organizations {
		return err // judged by organizations itself
	}
	var (
		te    *transportError
		stale *staleConnError
	)
	if errors.As(err, &te) && (w.apiGap.tolerates() || errors.As(err, &stale)) {
		w.tally.gapRefusals.Add(1)
		return nil
	}
	if err == nil {
		w.apiGap.answered(restarted)
	}
	return err
}

// op does one operation chosen at random and says whether it was
// get-organizations rather than an API call.
func (w *soakWorker) op(ctx context.Context) (organizations bool, err error) {
	live := slices.DeleteFunc(slices.Clone(w.orgs), func(o *soakOrg) bool { return o.deleted })
	if len(live) == 0 {
		return false, w.createOrg(ctx)
	}
	org := pick(w.rng, live)
	depts := liveDepts(org)
	switch r := w.rng.IntN(20); {
	case r < 1:
		if len(live) < soakMaxLiveOrgs {
			return false, w.createOrg(ctx)
		}
		return false, w.deleteOrg(ctx, org)
	case r < 2:
		if len(live) > 1 {
			return false, w.deleteOrg(ctx, org)
		}
		return false, w.createOrg(ctx)
	case r < 6 || len(depts) == 0:
		return false, w.createDept(ctx, org, depts)
	case r < 10:
		return false, w.assign(ctx, pick(w.rng, depts))
	case r < 11:
		return false, w.unassign(ctx, pick(w.rng, depts))
	case r < 12:
		return false, w.deleteDept(ctx, pick(w.rng, depts))
	case r < 15 || w.client == nil:
		w.tally.reads.Add(1)
		return false, w.api.call(ctx, http.StatusOK, http.MethodGet, "/"+org.id+"/departments/tenant-tree", nil, nil)
	default:
		return true, w.organizations(ctx)
	}
}

func (w *soakWorker) createOrg(ctx context.Context) error {
	w.created++
	alias := fmt.Sprintf("soak-w%d-%d", w.n, w.created)
	var out idResult
	if err := w.api.call(ctx, http.StatusCreated, http.MethodPost, "",
		map[string]any{"name": "Soak " + alias, "alias": alias}, &out); err != nil {
		return err
	}
	w.tally.orgCreates.Add(1)
	w.orgs = append(w.orgs, &soakOrg{id: out.Result.ID, alias: alias})
	return nil
}

func (w *soakWorker) deleteOrg(ctx context.Context, o *soakOrg) error {
	if err := w.api.call(ctx, http.StatusOK, http.MethodDelete, "/"+o.id, nil, nil); err != nil {
		return err
	}
	w.tally.orgDeletes.Add(1)
	o.deleted = true
	for _, d := range o.depts {
		d.markDeleted()
	}
	return nil
}

func (w *soakWorker) createDept(ctx context.Context, o *soakOrg, live []*soakDept) error {
	var parent *soakDept
	if len(live) > 0 && w.rng.IntN(3) > 0 {
		if p := pick(w.rng, live); p.depth < soakMaxDepth {
			parent = p
		}
	}
	path := "/" + o.id + "/departments"
	depth := 1
	if parent != nil {
		path += "/" + parent.id + "/sub-departments"
		depth = parent.depth + 1
	}
	w.created++
	var out idResult
	if err := w.api.call(ctx, http.StatusCreated, http.MethodPost, path,
		map[string]any{"name": fmt.Sprint("Dept ", w.created), "alias": fmt.Sprint("d-", w.created)}, &out); err != nil {
		return err
	}
	w.tally.deptCreates.Add(1)
	d := &soakDept{id: out.Result.ID, org: o, parent: parent, depth: depth, users: map[string]bool{}}
	if out.Result.ParentID != d.parentID() {
		return fmt.Errorf("department %s created under %s, asked for %s", d.id, out.Result.ParentID, d.parentID())
	}
	o.depts = append(o.depts, d)
	if parent != nil {
		parent.children = append(parent.children, d)
	}
	return nil
}

func (w *soakWorker) assign(ctx context.Context, d *soakDept) error {
	user := pick(w.rng, w.userIDs)
	var out struct {
		Result struct {
			UserID       string `json:"userId"`
			DepartmentID string `json:"departmentId"`
		} `json:"result"`
	}
	if err := w.api.call(ctx, http.StatusOK, http.MethodPost, "/"+d.org.id+"/departments/"+d.id+"/users",
		map[string]any{"userId": user, "departmentId": d.id}, &out); err != nil {
		return err
	}
	if out.Result.UserID != user || out.Result.DepartmentID != d.id {
		return fmt.Errorf("assigned %s to %s, the answer says %+v", user, d.id, out.Result)
	}
	w.tally.assigns.Add(1)
	d.users[user] = true
	return nil
}

func (w *soakWorker) unassign(ctx context.Context, d *soakDept) error {
	if len(d.users) == 0 {
		return w.assign(ctx, d)
	}
	var users []string
	for u := range d.users {
		users = append(users, u)
	}
	slices.Sort(users) // map order would make the run irreproducible
	user := pick(w.rng, users)
	if err := w.api.call(ctx, http.StatusOK, http.MethodDelete,
		"/"+d.org.id+"/departments/"+d.id+"/users/"+url.PathEscape(user), nil, nil); err != nil {
		return err
	}
	w.tally.unassigns.Add(1)
	delete(d.users, user)
	return nil
}

func (w *soakWorker) deleteDept(ctx context.Context, d *soakDept) error {
	if err := w.api.call(ctx, http.StatusOK, http.MethodDelete, "/"+d.org.id+"/departments/"+d.id, nil, nil); err != nil {
		return err
	}
	w.tally.deptDeletes.Add(1)
	d.markDeleted()
	return nil
}

// organizations calls get-organizations: the subject is the worker's user,
// and every organization listed holds at least one of its departments.
func (w *soakWorker) organizations(ctx context.Context) error {
	restarted := w.env.restarts.Load()
	oc, err := w.client.Organizations(ctx)
	if err != nil {
		if w.pepGap.tolerates() && errors.Is(err, pep.ErrUnavailable) {
			w.tally.gapErrors.Add(1)
			return nil
		}
		return fmt.Errorf("Organizations: %w", err)
	}
	w.pepGap.answered(restarted)
	w.tally.organizationsCalls.Add(1)
	if oc.UserID != w.userID {
		return fmt.Errorf("Organizations: user %q, want %q", oc.UserID, w.userID)
	}
	for _, t := range oc.Tenants {
		if t.ID == "" || len(t.Departments) == 0 {
			return fmt.Errorf("Organizations: tenant %+v without id or departments", t)
		}
	}
	return nil
}

// backToBaseline waits until goroutines and heap come back to what they
// were before a load (goroutinesBefore, heapBefore), failing t if they do
// not within ten seconds each, and returns what they came back to. The
// server and the connections are closed; the goroutines that served them
// end shortly after. The condition runs on a goroutine of Eventually's
// own, hence the one more. The heap bound is generous: the runtime and the
// HTTP stack keep some pools, but the server's store, the clients and
// their caches must be gone. Objects kept for a finalizer or in a pool's
// victim cache go a cycle or two later, hence the poll.
func backToBaseline(t *testing.T, goroutinesBefore int, heapBefore uint64) (goroutinesAfter int, heapAfter uint64) {
	back := assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= goroutinesBefore+1 },
		10*time.Second, 10*time.Millisecond, "goroutines did not return to %d", goroutinesBefore)
	goroutinesAfter = runtime.NumGoroutine()
	if !back {
		buf := make([]byte, 1<<20)
		t.Logf("goroutines left:\n%s", buf[:runtime.Stack(buf, true)])
	}
	heapLimit := 2*heapBefore + 8<<20
	var after atomic.Uint64
	assert.Eventually(t, func() bool {
		after.Store(testkit.LiveHeap())
		return after.Load() <= heapLimit
	}, 10*time.Second, 100*time.Millisecond, "heap did not return below %d B (before: %d B)", heapLimit, heapBefore)
	return goroutinesAfter, after.Load()
}

// TestSoak runs the load for -soak.duration in a subtest that owns the
// server and every connection, checks the final state, and then checks that
// goroutines and heap came back to what they were before it.
func TestSoak(t *testing.T) {
	goroutinesBefore := runtime.NumGoroutine()
	heapBefore := testkit.LiveHeap()
	var s soakSummary
	t.Run("load", func(t *testing.T) { s = soakLoad(t, *soakDuration, *soakWorkers, *soakUsers) })
	if s.tally == nil {
		return // the load stopped early
	}

	goroutinesAfter, heapAfter := backToBaseline(t, goroutinesBefore, heapBefore)

	tl := s.tally
	t.Logf("soak: %v, realm of %d users (%d active), %d writers + %d noisy-tenant writers, %d deciders, %d junk callers: "+
		"%d requests, %d 5xx, %d transport errors (%d while the gateway was up); "+
		"%d writes acknowledged and verified (%d org creates, %d dept creates, %d assignments, %d unassignments, %d dept deletes, %d org deletes), "+
		"%d objects checked in %v, %d reads, %d decision calls (%d pairs, cache hit ratio %.4f), %d get-organizations, "+
		"%d junk calls (%d refused with 401); restart: gap %v, %d writes refused, %d pairs and %d get-organizations failed closed in the gap, 0 false GRANTs; "+
		"goroutines %d -> %d; heap %.1f MiB -> %.1f MiB at the end of the load -> %.1f MiB after",
		s.elapsed.Round(time.Millisecond), s.users, soakActive, s.workers, soakNoisyWorkers, soakDeciders, soakJunkCallers,
		s.requests, s.fiveXX, s.transport, s.unexpected,
		tl.writes(), tl.orgCreates.Load(), tl.deptCreates.Load(), tl.assigns.Load(),
		tl.unassigns.Load(), tl.deptDeletes.Load(), tl.orgDeletes.Load(),
		s.checked, s.verifyTime.Round(time.Millisecond), tl.reads.Load(), tl.decisionCalls.Load(), tl.decisionPairs.Load(), s.hitRatio,
		tl.organizationsCalls.Load(), tl.junkCalls.Load(), tl.junkRefused.Load(),
		s.gap.Round(time.Millisecond), tl.gapRefusals.Load(), tl.gapDenials.Load(), tl.gapErrors.Load(),
		goroutinesBefore, goroutinesAfter, mib(heapBefore), mib(s.heapLoaded), mib(heapAfter))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// soakSummary is what the load phase reports.
type soakSummary struct {
	elapsed        time.Duration
	workers, users int
	requests       int64
	fiveXX         int64
	transport      int64
	unexpected     int64
	checked        int64
	verifyTime     time.Duration
	heapLoaded     uint64
	hitRatio       float64
	gap            time.Duration
	tally          *soakTally
}

// newSoakClient makes every pep client of the soak, with hc and then
// extra: a loaded machine is slow, not down (the hang guard,
// hangguard.Timeout, rather than the 2 s default), and the breaker cools
// down quickly so that the clients recover from the restart in a short run.
func newSoakClient(gateway string, hc *http.Client, extra ...pep.Option) (*pep.Client, error) {
	return pep.New(gateway, soakRealm, soakClient, append([]pep.Option{pep.WithHTTPClient(hc), pep.WithTimeout(hangguard.Timeout),
		pep.WithBreaker(3, 20*time.Millisecond)}, extra...)...)
}

func soakLoad(t *testing.T, duration time.Duration, workers, users int) soakSummary {
	require.GreaterOrEqual(t, users, soakActive, "-soak.users")
	env := &soakEnv{}
	gw, ln := gatewaytest.Listen(t)
	srv, err := mockserver.New(mockserver.WithFixture(soakFixture(users)), mockserver.WithIssuer(gw.URL), es256Tokens)
	require.NoError(t, err)
	gw.Serve(ln, srv)
	tr := &http.Transport{MaxIdleConnsPerHost: 4 * workers}
	t.Cleanup(tr.CloseIdleConnections)
	counter := &soakCounter{env: env}
	tr.DialContext = counter.dial
	counter.base = tr
	hc := &http.Client{Transport: counter}
	// Tokens outlive the longest soak: the default lifetime is 5 minutes.
	life := mockserver.TokenLifetime(duration + time.Hour)
	token := func(realm, user string, opts ...mockserver.TokenOption) string {
		tok, err := srv.IssueToken(realm, user, opts...)
		require.NoError(t, err)
		return tok
	}
	orgs := "/admin/realms/%s/organizations"
	api := &soakAPI{hc: hc, base: gw.URL + fmt.Sprintf(orgs, soakRealm), token: token(soakRealm, "admin", life)}
	noisyAPI := &soakAPI{hc: hc, base: gw.URL + fmt.Sprintf(orgs, soakNoisyRealm), token: token(soakNoisyRealm, "admin", life)}

	// The active users are spread over the realm, viewers and not
	// alternately; the others are there only to make the realm large.
	active := make([]soakUser, soakActive)
	activeIDs := make([]string, soakActive)
	stride := users / soakActive
	for i := range active {
		n := (i*stride)&^1 + i%2
		u := soakUser{name: fmt.Sprint("u", n), viewer: n%2 == 0}
		u.token = token(soakRealm, u.name, life)
		u.id, err = subject(u.token)
		require.NoError(t, err)
		active[i], activeIDs[i] = u, u.id
	}
	noisyIDs := make([]string, soakNoisyUsers)
	for i := range noisyIDs {
		noisyIDs[i], err = subject(token(soakNoisyRealm, fmt.Sprint("n", i), life))
		require.NoError(t, err)
	}

	tally := &soakTally{}
	newClient := func(opts ...pep.Option) *pep.Client {
		return testkit.Must(newSoakClient(gw.URL, hc, opts...))(t)
	}
	var steps []func(context.Context) error
	// The writers of acme: each with its own pep client for
	// get-organizations, with the token of an active user.
	ws := make([]*soakWorker, workers)
	for n := range ws {
		u := active[n%soakActive]
		c := newClient(pep.WithCache(0, 0, 0))
		c.SetToken(u.token)
		w := &soakWorker{n: n, rng: rand.New(rand.NewPCG(uint64(n), 0x50a4)), api: api, client: c,
			userID: u.id, userIDs: activeIDs, tally: tally, env: env}
		ws[n] = w
		env.gaps = append(env.gaps, &w.apiGap, &w.pepGap)
		steps = append(steps, w.step)
	}
	// The noisy tenant's writers: API only.
	noisy := make([]*soakWorker, soakNoisyWorkers)
	for n := range noisy {
		w := &soakWorker{n: 1000 + n, rng: rand.New(rand.NewPCG(uint64(1000+n), 0x50a4)), api: noisyAPI,
			userIDs: noisyIDs, tally: tally, env: env}
		noisy[n] = w
		env.gaps = append(env.gaps, &w.apiGap)
		steps = append(steps, w.step)
	}
	// The legitimate services: a cached client each (the defaults: 30 s
	// for a GRANT, 10 s for a DENY), serving a share of the active users.
	deciders := make([]*soakDecider, soakDeciders)
	for n := range deciders {
		d := &soakDecider{n: n, rng: rand.New(rand.NewPCG(uint64(n), 0xdec1)), client: newClient(),
			tally: tally, env: env}
		for i := n; i < soakActive; i += soakDeciders {
			d.users = append(d.users, active[i])
		}
		deciders[n] = d
		env.gaps = append(env.gaps, &d.gap)
		steps = append(steps, d.step)
	}
	// The junk callers: every token is refused with a 401.
	real := active[0].token
	forged := real[:len(real)-4] + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, real[len(real)-4:])
	junkTokens := []string{
		"not-a-token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", forged,
		token(soakRealm, "u1", mockserver.TokenLifetime(-time.Minute)), // expired
		token(soakNoisyRealm, "n0", life),                              // another realm's
	}
	junk := make([]*soakJunk, soakJunkCallers)
	for n := range junk {
		j := &soakJunk{n: n, rng: rand.New(rand.NewPCG(uint64(n), 0x7a4c)), client: newClient(),
			tokens: junkTokens, tally: tally, env: env}
		junk[n] = j
		env.gaps = append(env.gaps, &j.gap)
		steps = append(steps, j.step)
	}

	start := time.Now()
	end := start.Add(duration)
	var g errgroup.Group
	for _, step := range steps {
		g.Go(func() error {
			for time.Now().Before(end) {
				if err := step(t.Context()); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// One restart, half-way through.
	var gap time.Duration
	g.Go(func() error {
		select {
		case <-time.After(duration / 2):
		case <-t.Context().Done():
			return nil
		}
		var err error
		// Down until a write was refused and a pep call failed closed.
		gap, err = env.restart(t.Context(), gw, func() bool {
			return tally.gapRefusals.Load() > 0 && tally.gapDenials.Load()+tally.gapErrors.Load() > 0
		})
		return err
	})
	require.NoError(t, g.Wait())
	elapsed := time.Since(start)
	heapLoaded := testkit.LiveHeap()
	require.EqualValues(t, 1, env.restarts.Load(), "the gateway restarted once")

	// Every client recovered without being rebuilt: a fresh answer from
	// the gateway, right and clean.
	for _, d := range deciders {
		u := d.users[0]
		res := testkit.Must(d.client.CheckMany(pep.WithToken(t.Context(), u.token), soakAsk, pep.NoCache()))(t)
		for _, dec := range res.Decisions {
			want := pep.Deny
			if u.viewer {
				want = soakWant[dec.Resource+"/"+dec.Scope]
			}
			require.NoError(t, dec.Cause, "decider %d recovered", d.n)
			require.Equal(t, want, dec.Status, "decider %d: %s/%s", d.n, dec.Resource, dec.Scope)
		}
	}
	for _, w := range ws {
		testkit.Must(w.client.Organizations(t.Context()))(t, "writer %d recovered", w.n)
	}
	for _, j := range junk {
		_, err := j.client.CheckMany(pep.WithToken(t.Context(), junkTokens[0]), soakAsk)
		require.ErrorIs(t, err, pep.ErrUnauthorized, "junk caller %d", j.n)
		st := j.client.Stats()
		assert.Zero(t, st.CacheHits, "a refused token is never answered from the cache")
		assert.Zero(t, st.CacheEntries, "nothing is cached for a refused token")
	}

	verifyStart := time.Now()
	checked := testkit.Must(soakVerify(t.Context(), api, ws, activeIDs))(t)
	checkedNoisy := testkit.Must(soakVerify(t.Context(), noisyAPI, noisy, noisyIDs))(t)
	require.NoError(t, srv.CheckInvariants(), "no index disagrees and nothing is orphaned")
	verifyTime := time.Since(verifyStart)
	assert.Empty(t, counter.fiveXX(), "no request may get a 5xx")
	counter.mu.Lock()
	assert.Zero(t, counter.unexpected.Load(), "no request may fail in transport while the gateway is up: %q", counter.oddErrs)
	counter.mu.Unlock()
	assert.Positive(t, tally.junkRefused.Load(), "junk tokens were sent and refused")

	// The hit ratio is over the lookups a cache could answer: a user's
	// first lookup misses, however good the cache (soakDecider.firstMisses).
	var hits, misses, first uint64
	for _, d := range deciders {
		st := d.client.Stats()
		hits, misses, first = hits+st.CacheHits, misses+st.CacheMisses, first+d.firstMisses
	}
	require.GreaterOrEqual(t, misses, first, "every first lookup misses")
	require.Greater(t, hits+misses-first, uint64(0), "the legitimate callers looked a pair up again")
	ratio := float64(hits) / float64(hits+misses-first)
	assert.GreaterOrEqual(t, ratio, 0.9, "the legitimate callers' cache hit ratio (%d hits, %d misses of which %d first lookups)",
		hits, misses, first)
	return soakSummary{
		elapsed: elapsed, workers: workers, users: users, requests: counter.requests.Load(),
		fiveXX: int64(len(counter.fiveXX())), transport: counter.failures.Load(), unexpected: counter.unexpected.Load(),
		checked: checked + checkedNoisy, verifyTime: verifyTime, heapLoaded: heapLoaded, hitRatio: ratio, gap: gap, tally: tally,
	}
}

// soakVerify checks through the API that the server holds exactly what the
// workers' acknowledged writes say: live organizations and departments are
// there with their parents, deleted ones (and the subtrees of deleted
// departments and organizations) are gone, every live organization's tree
// is exactly the model's, every user's assignments are exactly the live
// ones, and a deleted organization's alias can be taken again (its index
// entry went with it). It returns how many objects it checked.
func soakVerify(ctx context.Context, api *soakAPI, ws []*soakWorker, userIDs []string) (int64, error) {
	var checked atomic.Int64
	var g errgroup.Group
	g.SetLimit(8)
	wantAssign := map[string]map[string]bool{} // user -> "org/dept"
	for _, u := range userIDs {
		wantAssign[u] = map[string]bool{}
	}
	reuse := soakMaxAliasReuse
	for _, w := range ws {
		for _, o := range w.orgs {
			if o.deleted {
				again := reuse > 0
				reuse--
				g.Go(func() error {
					checked.Add(1)
					if err := api.call(ctx, http.StatusNotFound, http.MethodGet, "/"+o.id, nil, nil); err != nil {
						return fmt.Errorf("deleted organization: %w", err)
					}
					if !again {
						return nil
					}
					return api.call(ctx, http.StatusCreated, http.MethodPost, "",
						map[string]any{"name": "Again " + o.alias, "alias": o.alias}, nil)
				})
			} else {
				g.Go(func() error {
					checked.Add(1)
					var out idResult
					if err := api.call(ctx, http.StatusOK, http.MethodGet, "/"+o.id, nil, &out); err != nil {
						return fmt.Errorf("live organization: %w", err)
					}
					if out.Result.Alias != o.alias {
						return fmt.Errorf("organization %s has alias %q, want %q", o.id, out.Result.Alias, o.alias)
					}
					return soakVerifyTree(ctx, api, o)
				})
			}
			for _, d := range o.depts {
				want := http.StatusOK
				if d.deleted {
					want = http.StatusNotFound
				}
				for u := range d.users {
					wantAssign[u][o.id+"/"+d.id] = true
				}
				g.Go(func() error {
					checked.Add(1)
					var out idResult
					if err := api.call(ctx, want, http.MethodGet, "/"+o.id+"/departments/"+d.id, nil, &out); err != nil {
						return fmt.Errorf("department (deleted %v): %w", d.deleted, err)
					}
					if !d.deleted && out.Result.ParentID != d.parentID() {
						return fmt.Errorf("department %s has parent %s, want %s", d.id, out.Result.ParentID, d.parentID())
					}
					return nil
				})
			}
		}
	}
	for _, u := range userIDs {
		want := wantAssign[u]
		g.Go(func() error {
			checked.Add(1)
			got, err := soakAssignments(ctx, api, u)
			if err != nil {
				return err
			}
			for k := range want {
				if !got[k] {
					return fmt.Errorf("user %s: acknowledged assignment %s is missing", u, k)
				}
			}
			for k := range got {
				if !want[k] {
					return fmt.Errorf("user %s: assignment %s should be gone", u, k)
				}
			}
			return nil
		})
	}
	err := g.Wait()
	return checked.Load(), err
}

// soakVerifyTree checks that the organization's tenant-tree is exactly its
// live departments, each under its parent.
func soakVerifyTree(ctx context.Context, api *soakAPI, o *soakOrg) error {
	type node struct {
		ID       string `json:"id"`
		Children []node `json:"children"`
	}
	var out struct {
		Result []node `json:"result"`
	}
	if err := api.call(ctx, http.StatusOK, http.MethodGet, "/"+o.id+"/departments/tenant-tree", nil, &out); err != nil {
		return err
	}
	got := map[string]string{} // department -> parent
	var walk func(parent string, ns []node)
	walk = func(parent string, ns []node) {
		for _, n := range ns {
			got[n.ID] = parent
			walk(n.ID, n.Children)
		}
	}
	walk(o.id, out.Result)
	want := map[string]string{}
	for _, d := range liveDepts(o) {
		want[d.id] = d.parentID()
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("organization %s: tenant-tree %v, want %v", o.id, got, want)
	}
	return nil
}

// soakAssignments pages through a user's assignments.
func soakAssignments(ctx context.Context, api *soakAPI, user string) (map[string]bool, error) {
	got := map[string]bool{}
	for offset := 0; ; {
		var page struct {
			MetaData struct {
				TotalRows int `json:"totalRows"`
			} `json:"metaData"`
			Results []struct {
				OrganizationID string `json:"organizationId"`
				DepartmentID   string `json:"departmentId"`
			} `json:"results"`
		}
		path := fmt.Sprintf("/users/%s/assignments?offset=%d&count=100", url.PathEscape(user), offset)
		if err := api.call(ctx, http.StatusOK, http.MethodGet, path, nil, &page); err != nil {
			return nil, err
		}
		for _, r := range page.Results {
			k := r.OrganizationID + "/" + r.DepartmentID
			if got[k] {
				return nil, fmt.Errorf("user %s: assignment %s listed twice", user, k)
			}
			got[k] = true
		}
		offset += len(page.Results)
		if len(page.Results) == 0 || offset >= page.MetaData.TotalRows {
			if offset != page.MetaData.TotalRows {
				return nil, errors.New("assignments: the pages do not add up to totalRows")
			}
			return got, nil
		}
	}
}
