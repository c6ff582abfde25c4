package soak_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

var (
	soakDuration = flag.Duration("soak.duration", 3*time.Second, "how long TestSoak sends load")
	soakWorkers  = flag.Int("soak.workers", 16, "how many concurrent clients TestSoak runs")
)

const (
	soakRealm  = "acme"
	soakClient = "orders-api"
	soakUsers  = 8 // u0..u7; the even ones are viewers
	// soakMaxLiveOrgs bounds the organizations a worker keeps at once.
	soakMaxLiveOrgs = 4
	// soakMaxDepth bounds the department trees the workers grow.
	soakMaxDepth = 4
	// soakMaxAliasReuse bounds how many deleted organizations' aliases the
	// check takes again (each is a write; the first ones are enough to
	// show that deletes free the alias index).
	soakMaxAliasReuse = 1000
)

// soakFixture: viewers may read orders and invoices; nobody may write or
// pay. No role is linked to an organization, so the organization writes of
// the soak never change a decision: every decision has one right answer.
func soakFixture() mockserver.Fixture {
	users := []mockserver.FixtureUser{{Username: "admin", Roles: []string{"realm-admin"}}}
	for i := range soakUsers {
		u := mockserver.FixtureUser{Username: fmt.Sprint("u", i)}
		if i%2 == 0 {
			u.Roles = []string{"viewer"}
		}
		users = append(users, u)
	}
	return mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:  soakRealm,
		Roles: []mockserver.FixtureRole{{Name: "viewer"}},
		Users: users,
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
// and remembers the 5xx answers.
type soakCounter struct {
	base       http.RoundTripper
	requests   atomic.Int64
	failures   atomic.Int64 // transport errors
	mu         sync.Mutex
	serverErrs []string
}

func (c *soakCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	method, path := r.Method, r.URL.Path
	resp, err := c.base.RoundTrip(r)
	c.requests.Add(1)
	switch {
	case err != nil:
		c.failures.Add(1)
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
		return fmt.Errorf("%s %s: %w", method, path, err)
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
}

func (t *soakTally) writes() int64 {
	return t.orgCreates.Load() + t.deptCreates.Load() + t.assigns.Load() + t.unassigns.Load() +
		t.deptDeletes.Load() + t.orgDeletes.Load()
}

// soakWorker is one concurrent client: organization writes with the admin
// token, decisions and get-organizations with its user's token.
type soakWorker struct {
	n       int
	rng     *rand.Rand
	api     *soakAPI
	client  *pep.Client
	viewer  bool
	userID  string   // the worker's user
	userIDs []string // every user, for assignments
	tally   *soakTally
	orgs    []*soakOrg
	created int // for unique aliases
}

func (w *soakWorker) liveOrgs() []*soakOrg {
	var out []*soakOrg
	for _, o := range w.orgs {
		if !o.deleted {
			out = append(out, o)
		}
	}
	return out
}

func liveDepts(o *soakOrg) []*soakDept {
	var out []*soakDept
	for _, d := range o.depts {
		if !d.deleted {
			out = append(out, d)
		}
	}
	return out
}

func pick[T any](rng *rand.Rand, list []T) T { return list[rng.IntN(len(list))] }

// step does one operation chosen at random.
func (w *soakWorker) step(ctx context.Context) error {
	live := w.liveOrgs()
	if len(live) == 0 {
		return w.createOrg(ctx)
	}
	org := pick(w.rng, live)
	depts := liveDepts(org)
	switch r := w.rng.IntN(20); {
	case r < 1:
		if len(live) < soakMaxLiveOrgs {
			return w.createOrg(ctx)
		}
		return w.deleteOrg(ctx, org)
	case r < 2:
		if len(live) > 1 {
			return w.deleteOrg(ctx, org)
		}
		return w.createOrg(ctx)
	case r < 5 || len(depts) == 0:
		return w.createDept(ctx, org, depts)
	case r < 8:
		return w.assign(ctx, pick(w.rng, depts))
	case r < 9:
		return w.unassign(ctx, pick(w.rng, depts))
	case r < 10:
		return w.deleteDept(ctx, pick(w.rng, depts))
	case r < 11:
		w.tally.reads.Add(1)
		return w.api.call(ctx, http.StatusOK, http.MethodGet, "/"+org.id+"/departments/tenant-tree", nil, nil)
	case r < 17:
		return w.decide(ctx, r == 16)
	default:
		return w.organizations(ctx)
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

// decide asks for the four pairs (bypassing the cache when fresh is set)
// and checks every answer: the policy never changes during the soak.
func (w *soakWorker) decide(ctx context.Context, fresh bool) error {
	var opts []pep.CallOption
	if fresh {
		opts = append(opts, pep.NoCache())
	}
	res, err := w.client.CheckMany(ctx, soakAsk, opts...)
	if err != nil {
		return fmt.Errorf("CheckMany: %w", err)
	}
	w.tally.decisionCalls.Add(1)
	w.tally.decisionPairs.Add(int64(len(res.Decisions)))
	if len(res.Decisions) != len(soakWant) {
		return fmt.Errorf("CheckMany: %d decisions, want %d", len(res.Decisions), len(soakWant))
	}
	for _, d := range res.Decisions {
		if d.Cause != nil {
			return fmt.Errorf("CheckMany: %s/%s failed closed: %w", d.Resource, d.Scope, d.Cause)
		}
		want := pep.Deny
		if w.viewer {
			want = soakWant[d.Resource+"/"+d.Scope]
		}
		if d.Status != want {
			return fmt.Errorf("CheckMany: %s/%s is %v, want %v (viewer %v)", d.Resource, d.Scope, d.Status, want, w.viewer)
		}
	}
	return nil
}

// organizations calls get-organizations: the subject is the worker's user,
// and every organization listed holds at least one of its departments.
func (w *soakWorker) organizations(ctx context.Context) error {
	oc, err := w.client.Organizations(ctx)
	if err != nil {
		return fmt.Errorf("Organizations: %w", err)
	}
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

// soakHeap returns the live heap after a full collection.
func soakHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSoak runs the load for -soak.duration in a subtest that owns the
// server and every connection, checks the final state, and then checks that
// goroutines and heap came back to what they were before it.
func TestSoak(t *testing.T) {
	goroutinesBefore := runtime.NumGoroutine()
	heapBefore := soakHeap()
	var s soakSummary
	t.Run("load", func(t *testing.T) { s = soakLoad(t, *soakDuration, *soakWorkers) })
	if t.Failed() {
		return
	}

	// The server and the connections are closed; the goroutines that
	// served them end shortly after. The condition runs on a goroutine of
	// Eventually's own, hence the one more.
	back := assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= goroutinesBefore+1 },
		10*time.Second, 10*time.Millisecond, "goroutines did not return to %d", goroutinesBefore)
	goroutinesAfter := runtime.NumGoroutine()
	if !back {
		buf := make([]byte, 1<<20)
		t.Logf("goroutines left:\n%s", buf[:runtime.Stack(buf, true)])
	}
	// Generous: the runtime and the HTTP stack keep some pools, but the
	// server's store, the clients and their caches must be gone. Objects
	// kept for a finalizer or in a pool's victim cache go a cycle or two
	// later, hence the poll.
	heapLimit := 2*heapBefore + 8<<20
	var heapAfter atomic.Uint64
	assert.Eventually(t, func() bool {
		heapAfter.Store(soakHeap())
		return heapAfter.Load() <= heapLimit
	}, 10*time.Second, 100*time.Millisecond, "heap did not return below %d B (before: %d B)", heapLimit, heapBefore)

	t.Logf("soak: %v with %d workers: %d requests, %d errors (%d 5xx, %d transport), "+
		"%d writes acknowledged and verified (%d org creates, %d dept creates, %d assignments, %d unassignments, %d dept deletes, %d org deletes), "+
		"%d objects checked in %v, %d reads, %d decision calls (%d pairs), %d get-organizations; "+
		"goroutines %d -> %d; heap %.1f MiB -> %.1f MiB at the end of the load -> %.1f MiB after",
		s.elapsed.Round(time.Millisecond), s.workers, s.requests, s.fiveXX+s.transport, s.fiveXX, s.transport,
		s.tally.writes(), s.tally.orgCreates.Load(), s.tally.deptCreates.Load(), s.tally.assigns.Load(),
		s.tally.unassigns.Load(), s.tally.deptDeletes.Load(), s.tally.orgDeletes.Load(),
		s.checked, s.verifyTime.Round(time.Millisecond), s.tally.reads.Load(), s.tally.decisionCalls.Load(), s.tally.decisionPairs.Load(),
		s.tally.organizationsCalls.Load(),
		goroutinesBefore, goroutinesAfter, mib(heapBefore), mib(s.heapLoaded), mib(heapAfter.Load()))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// soakSummary is what the load phase reports.
type soakSummary struct {
	elapsed           time.Duration
	workers           int
	requests          int64
	fiveXX, transport int64
	checked           int64
	verifyTime        time.Duration
	heapLoaded        uint64
	tally             *soakTally
}

func soakLoad(t *testing.T, duration time.Duration, workers int) soakSummary {
	srv := mockservertest.Start(t, mockserver.WithFixture(soakFixture()))
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * workers}
	t.Cleanup(tr.CloseIdleConnections)
	counter := &soakCounter{base: tr}
	hc := &http.Client{Transport: counter}
	// Tokens outlive the longest soak: the default lifetime is 5 minutes.
	life := mockserver.TokenLifetime(duration + time.Hour)
	api := &soakAPI{hc: hc, base: srv.URL + "/admin/realms/" + soakRealm + "/organizations", token: srv.Token(soakRealm, "admin", life)}

	// One pep client per user learns the user's id from get-organizations.
	clients := make([]*pep.Client, soakUsers)
	userIDs := make([]string, soakUsers)
	for i := range soakUsers {
		c, err := pep.New(srv.URL, soakRealm, soakClient, pep.WithHTTPClient(hc),
			pep.WithTimeout(time.Minute), // a loaded machine is slow, not down
			pep.WithCache(1000, time.Second, time.Second))
		require.NoError(t, err)
		c.SetToken(srv.Token(soakRealm, fmt.Sprint("u", i), life))
		oc, err := c.Organizations(t.Context())
		require.NoError(t, err)
		require.NotEmpty(t, oc.UserID)
		clients[i], userIDs[i] = c, oc.UserID
	}

	tally := &soakTally{}
	ws := make([]*soakWorker, workers)
	for n := range workers {
		u := n % soakUsers
		c := clients[u]
		if n >= soakUsers { // the second half asks without a cache
			var err error
			c, err = pep.New(srv.URL, soakRealm, soakClient, pep.WithHTTPClient(hc),
				pep.WithTimeout(time.Minute), pep.WithCache(0, 0, 0))
			require.NoError(t, err)
			c.SetToken(srv.Token(soakRealm, fmt.Sprint("u", u), life))
		}
		ws[n] = &soakWorker{
			n: n, rng: rand.New(rand.NewPCG(uint64(n), 0x50a4)), api: api, client: c,
			viewer: u%2 == 0, userID: userIDs[u], userIDs: userIDs, tally: tally,
		}
	}

	start := time.Now()
	end := start.Add(duration)
	var g errgroup.Group
	for _, w := range ws {
		g.Go(func() error {
			for time.Now().Before(end) {
				if err := w.step(t.Context()); err != nil {
					return fmt.Errorf("worker %d: %w", w.n, err)
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	elapsed := time.Since(start)
	heapLoaded := soakHeap()

	verifyStart := time.Now()
	checked, err := soakVerify(t.Context(), api, ws, userIDs)
	require.NoError(t, err)
	require.NoError(t, srv.CheckInvariants(), "no index disagrees and nothing is orphaned")
	verifyTime := time.Since(verifyStart)
	assert.Empty(t, counter.fiveXX(), "no request may get a 5xx")
	assert.Zero(t, counter.failures.Load(), "no request may fail in transport")
	for _, c := range clients {
		assert.Zero(t, c.Stats().FailClosed, "no decision may fail closed")
	}
	return soakSummary{
		elapsed: elapsed, workers: workers, requests: counter.requests.Load(),
		fiveXX: int64(len(counter.fiveXX())), transport: counter.failures.Load(),
		checked: checked, verifyTime: verifyTime, heapLoaded: heapLoaded, tally: tally,
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
	if !mapsEqual(got, want) {
		return fmt.Errorf("organization %s: tenant-tree %v, want %v", o.id, got, want)
	}
	return nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
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
