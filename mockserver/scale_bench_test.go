package mockserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// The benchmarks of this file measure how the reference server's cost grows
// with the size of a realm, and whether one realm's work slows another's
// decisions (BENCHMARKS.md, "Reference server at scale and isolation").
// Realms are generated here: scaleFixture(orgs) has orgs organizations of
// scaleDepts departments (4 roots of 4 children each), 5 users assigned per
// department from as many users as there are departments (so each user
// holds 5 assignments, whatever the size), and two users of interest:
// "everywhere", assigned to one department of every organization, and
// "ten", assigned in the first ten organizations only. The sizes are the
// issue's: 125, 1,000 and 4,000 organizations, that is 2.5k, 20k and 80k
// departments and 12.5k, 100k and 400k assignments.

const (
	scaleDepts      = 20
	scaleBase       = "http://scale.test"
	scaleAuthorize  = "/realms/big/authorization-decision-provider/authorize"
	scaleOrgsPrefix = "/admin/realms/big/organizations"
	scaleDecision   = `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","write"]}],"context":{}}`
)

// scaleSizes are the realm sizes measured, by number of organizations.
var scaleSizes = []struct {
	name string
	orgs int
}{{"2.5k", 125}, {"20k", 1000}, {"80k", 4000}}

// scaleFixture builds realm "big" with orgs organizations (see above) and a
// client whose permissions follow the users' organization roles.
func scaleFixture(orgs int) Fixture {
	scaleUsers := orgs * scaleDepts
	users := make([]FixtureUser, 0, scaleUsers+3)
	users = append(users,
		FixtureUser{Username: "admin", Password: "admin", Roles: []string{"realm-admin"}},
		FixtureUser{Username: "everywhere"}, FixtureUser{Username: "ten"})
	for i := range scaleUsers {
		users = append(users, FixtureUser{Username: fmt.Sprint("u", i)})
	}
	realm := FixtureRealm{
		Name:  "big",
		Roles: []FixtureRole{{Name: "member"}, {Name: "writer"}},
		Users: users,
		Clients: []FixtureClient{{
			ClientID: "orders-api", Secret: "s",
			Resources:   []FixtureResource{{Name: "orders", Scopes: []string{"read", "write"}}},
			Permissions: []FixturePermission{{Name: "members read", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"member"}}},
		}},
	}
	next := 0
	assign := func(extra ...string) []string {
		out := extra
		for range 5 {
			out = append(out, fmt.Sprint("u", next%scaleUsers))
			next++
		}
		return out
	}
	for o := range orgs {
		fo := FixtureOrganization{Name: fmt.Sprintf("Org %05d", o), Alias: fmt.Sprint("org-", o), Roles: []string{"member"}}
		for r := range scaleDepts / 5 {
			root := FixtureDepartment{Name: fmt.Sprint("Root ", r), Alias: fmt.Sprint("r", r), Users: assign()}
			for c := range 4 {
				root.Children = append(root.Children, FixtureDepartment{Name: fmt.Sprint("Child ", c), Alias: fmt.Sprintf("r%d-c%d", r, c), Users: assign()})
			}
			fo.Departments = append(fo.Departments, root)
		}
		fo.Departments[0].Children[0].Users = append(fo.Departments[0].Children[0].Users, "everywhere")
		if o < 10 {
			fo.Departments[1].Users = append(fo.Departments[1].Users, "ten")
		}
		realm.Organizations = append(realm.Organizations, fo)
	}
	return Fixture{Realms: []FixtureRealm{realm}}
}

// flatFixture builds realm "big" with an admin and one organization "flat"
// of n root departments, named in order, or in reverse order when reverse.
func flatFixture(n int, reverse bool) Fixture {
	ds := make([]FixtureDepartment, n)
	for i := range ds {
		k := i
		if reverse {
			k = n - i
		}
		ds[i] = FixtureDepartment{Name: fmt.Sprintf("Dept %07d", k)}
	}
	return Fixture{Realms: []FixtureRealm{{Name: "big",
		Users:         []FixtureUser{{Username: "admin", Password: "admin", Roles: []string{"realm-admin"}}},
		Organizations: []FixtureOrganization{{Name: "Flat", Alias: "flat", Departments: ds}}}}}
}

// flatOrgID returns the id of flatFixture's organization.
func flatOrgID(tb testing.TB, s *Server) string {
	var id string
	err := s.store.Read("big", func(rm *store.Realm) error {
		id = rm.OrgByAlias["flat"]
		return nil
	})
	if err != nil || id == "" {
		tb.Fatalf("no organization flat: %v", err)
	}
	return id
}

// propTemplateBody is a property template of MaxProperties STRING
// properties whose keys start with name.
func propTemplateBody(name string) string {
	props := make([]map[string]any, store.MaxProperties)
	for i := range props {
		props[i] = map[string]any{"key": fmt.Sprintf("%s_%d", name, i), "label": "l", "type": "STRING"}
	}
	return mustJSON(map[string]any{"name": name, "properties": props})
}

// scaleServer loads fx into a new server.
func scaleServer(tb testing.TB, fx Fixture) *Server {
	tb.Helper()
	return testkit.Must(New(WithFixture(fx), WithIssuer(scaleBase), WithAdminSecret("boot")))(tb)
}

// serve runs one request in process and fails unless the status is want.
// It builds the request with http.NewRequest: httptest.NewRequest parses a
// request text through a fresh 4 KiB bufio.Reader, a third of all the bytes
// the isolation benchmark allocated, whose garbage collections then showed
// in the latencies measured.
func serve(tb testing.TB, h http.Handler, method, path, token, body string, want int) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := testkit.Must(http.NewRequest(method, scaleBase+path, rd))(tb)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		tb.Fatalf("%s %s: status %d, want %d: %.300s", method, path, rec.Code, want, rec.Body)
	}
	return rec
}

// realmIDs returns the ids of the organizations of realm big, in name order,
// of the first root department of each, and the user ids of interest.
func realmIDs(tb testing.TB, s *Server) (orgs, roots []string, users map[string]string) {
	users = map[string]string{}
	err := s.store.Read("big", func(rm *store.Realm) error {
		for _, o := range rm.Organizations("") {
			orgs = append(orgs, o.ID)
			ds, err := rm.Departments(o.ID, "")
			if err != nil {
				return err
			}
			roots = append(roots, ds.At(0).ID)
		}
		for _, n := range []string{"everywhere", "ten", "u0"} {
			users[n] = rm.UserByName[n]
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return orgs, roots, users
}

// BenchmarkScale measures, for each realm size, the fixture load and the
// per-request costs of the issue's table: assignments-tree of a user in
// every organization (also reported per organization in the answer) and
// of a user in ten, creating a department, listing the departments of a
// 20-department organization, a decision, and an audit page of 20 with
// 100,000 entries in the log. Heap after loading is reported by the load.
func BenchmarkScale(b *testing.B) {
	for _, size := range scaleSizes {
		fx := scaleFixture(size.orgs)
		b.Run(size.name+"/fixture-load", func(b *testing.B) {
			for b.Loop() {
				scaleServer(b, fx)
			}
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			s := scaleServer(b, fx)
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-min(after.HeapAlloc, before.HeapAlloc))/(1<<20), "heap-MiB")
			runtime.KeepAlive(s)
		})

		s := scaleServer(b, fx)
		admin, err := s.IssueToken("big", "admin")
		if err != nil {
			b.Fatal(err)
		}
		orgs, roots, users := realmIDs(b, s)
		b.Run(size.name+"/assignments-tree-every-org", func(b *testing.B) {
			for b.Loop() {
				serve(b, s, http.MethodGet, scaleOrgsPrefix+"/users/"+users["everywhere"]+"/assignments-tree", admin, "", http.StatusOK)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(orgs)), "ns/org")
		})
		b.Run(size.name+"/assignments-tree-ten-orgs", func(b *testing.B) {
			for b.Loop() {
				serve(b, s, http.MethodGet, scaleOrgsPrefix+"/users/"+users["ten"]+"/assignments-tree", admin, "", http.StatusOK)
			}
		})
		created := 0 // across the runs of the sub-benchmark: aliases stay unique
		b.Run(size.name+"/department-create", func(b *testing.B) {
			for b.Loop() {
				i := created
				// Round robin over the organizations' first root
				// departments, so that no sibling list grows long.
				k := i % len(roots)
				serve(b, s, http.MethodPost, scaleOrgsPrefix+"/"+orgs[k]+"/departments/"+roots[k]+"/sub-departments", admin,
					fmt.Sprintf(`{"name":"Bench %d","alias":"bench-%d"}`, i, i), http.StatusCreated)
				created++
			}
		})
		b.Run(size.name+"/department-list", func(b *testing.B) {
			i := 0
			for b.Loop() {
				serve(b, s, http.MethodGet, scaleOrgsPrefix+"/"+orgs[i%len(orgs)]+"/departments", admin, "", http.StatusOK)
				i++
			}
		})
		depts := size.orgs * scaleDepts
		b.Run(size.name+"/fixture-load-reversed", func(b *testing.B) {
			// One organization of as many root departments, listed in
			// reverse name order: each sibling list is built in
			// O(n log n), not O(n²).
			fx := flatFixture(depts, true)
			for b.Loop() {
				scaleServer(b, fx)
			}
		})
		b.Run(size.name+"/org-delete", func(b *testing.B) {
			// Deleting an organization of as many root departments
			// costs its size (ns/dept stays flat across sizes). Each
			// round loads a fresh one, untimed.
			fx := flatFixture(depts, false)
			for range b.N {
				b.StopTimer()
				fs := scaleServer(b, fx)
				tok, err := fs.IssueToken("big", "admin")
				if err != nil {
					b.Fatal(err)
				}
				org := flatOrgID(b, fs)
				b.StartTimer()
				serve(b, fs, http.MethodDelete, scaleOrgsPrefix+"/"+org, tok, "", http.StatusOK)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(depts), "ns/dept")
		})
		b.Run(size.name+"/property-templates", func(b *testing.B) {
			// An organization with as many properties as the realm has
			// departments (100 per template): a department create checks
			// its own attributes, and a template create its own keys,
			// whatever the number of templates.
			org := orgs[len(orgs)-1]
			for t := range depts / store.MaxProperties {
				serve(b, s, http.MethodPost, scaleOrgsPrefix+"/"+org+"/property-templates", admin, propTemplateBody(fmt.Sprint("t", t)), http.StatusCreated)
			}
			b.Run("department-create", func(b *testing.B) {
				i := 0
				for b.Loop() {
					serve(b, s, http.MethodPost, scaleOrgsPrefix+"/"+org+"/departments", admin,
						fmt.Sprintf(`{"name":"Prop %d","attributes":{"t0_0":["x"],"t1_1":["y"]}}`, i), http.StatusCreated)
					i++
				}
			})
			b.Run("template-create-delete", func(b *testing.B) {
				for b.Loop() {
					rec := serve(b, s, http.MethodPost, scaleOrgsPrefix+"/"+org+"/property-templates", admin, propTemplateBody("extra"), http.StatusCreated)
					serve(b, s, http.MethodDelete, scaleOrgsPrefix+"/"+org+"/property-templates/"+idOf(b, rec), admin, "", http.StatusOK)
				}
			})
		})
		b.Run(size.name+"/decision", func(b *testing.B) {
			tok, err := s.IssueToken("big", "u0")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				serve(b, s, http.MethodPost, scaleAuthorize, tok, scaleDecision, http.StatusOK)
			}
		})
	}

	b.Run("audit-page-100k", func(b *testing.B) {
		s := scaleServer(b, Fixture{})
		for i := range 100_000 {
			s.store.RecordAudit("t", store.AuditEntry{ActorID: fmt.Sprint("actor-", i%7), Action: "organization.create", TenantID: "t"})
		}
		admin, err := s.IssueToken("master", "service-account-platform-admin")
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			serve(b, s, http.MethodGet, "/admin/audit?count=20", admin, "", http.StatusOK)
		}
	})
	// A deep page of one tenant whose entries are spread over its log's
	// parts (accepted, refused): the entries skipped are found by binary
	// search, so it costs about what the first page costs.
	b.Run("audit-tenant-deep-page-100k", func(b *testing.B) {
		s := scaleServer(b, Fixture{})
		for i := range 100_000 {
			outcome := store.OutcomeSuccess
			if i%3 == 0 {
				outcome = store.OutcomeFailure
			}
			s.store.RecordAudit("t", store.AuditEntry{ActorID: fmt.Sprint("actor-", i%7), Action: "organization.create", TenantID: "t", Outcome: outcome})
		}
		admin, err := s.IssueToken("master", "service-account-platform-admin")
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			serve(b, s, http.MethodGet, "/admin/audit?tenantId=t&offset=90000&count=20", admin, "", http.StatusOK)
		}
	})
}

// BenchmarkDecisionTokens measures decisions cycling through n distinct
// tokens, each used once before the timer starts: the verified-token cache
// must hold them all, with no cliff once it holds more than 10,000.
func BenchmarkDecisionTokens(b *testing.B) {
	s := scaleServer(b, scaleFixture(10))
	for _, n := range []int{10, 1000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			toks := make([]string, n)
			for i := range toks {
				tok, err := s.IssueToken("big", fmt.Sprint("u", i%200))
				if err != nil {
					b.Fatal(err)
				}
				toks[i] = tok
				serve(b, s, http.MethodPost, scaleAuthorize, tok, scaleDecision, http.StatusOK)
			}
			runtime.GC() // the setup's garbage is not the decisions' cost
			i := 0
			for b.Loop() {
				serve(b, s, http.MethodPost, scaleAuthorize, toks[i%n], scaleDecision, http.StatusOK)
				i++
			}
		})
	}
}

// isolationSetup is the server of BenchmarkRealmIsolation: realm big of
// scaleFixture(1000), realm small with user carol, and in big a template of
// store.MaxTemplateNodes departments in the first organization.
type isolationSetup struct {
	s *Server
	// h serves the benchmark's requests: s itself, in process, or
	// overHTTP.
	h            http.Handler
	admin, carol string
	orgs         []string
	tmplID       string
}

const smallAuthorize = "/realms/small/authorization-decision-provider/authorize"

func newIsolationSetup(b *testing.B) *isolationSetup {
	return testkit.Must(buildIsolationSetup())(b)
}

// buildIsolationSetup is newIsolationSetup without a testing.TB, so that
// the test binary can also build it as a server process of its own
// (runIsolationServer).
func buildIsolationSetup() (*isolationSetup, error) {
	fx := scaleFixture(1000)
	fx.Realms = append(fx.Realms, FixtureRealm{
		Name:  "small",
		Roles: []FixtureRole{{Name: "member"}},
		Users: []FixtureUser{{Username: "carol", Roles: []string{"member"}}},
		Clients: []FixtureClient{{
			ClientID: "orders-api", Secret: "s",
			Resources:   []FixtureResource{{Name: "orders", Scopes: []string{"read", "write"}}},
			Permissions: []FixturePermission{{Name: "members read", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"member"}}},
		}},
	})
	s, err := New(WithFixture(fx), WithIssuer(scaleBase), WithAdminSecret("boot"))
	if err != nil {
		return nil, err
	}
	admin, err := s.IssueToken("big", "admin")
	if err != nil {
		return nil, err
	}
	carol, err := s.IssueToken("small", "carol")
	if err != nil {
		return nil, err
	}
	var orgs []string
	if err := s.store.Read("big", func(rm *store.Realm) error {
		for _, o := range rm.Organizations("") {
			orgs = append(orgs, o.ID)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	kids := make([]map[string]any, store.MaxTemplateNodes-1)
	for i := range kids {
		kids[i] = map[string]any{"name": fmt.Sprint("Unit ", i)}
	}
	tmplBody := mustJSON(map[string]any{"name": "wide", "root": map[string]any{"name": "Division", "children": kids}})
	req, err := http.NewRequest(http.MethodPost, scaleBase+scaleOrgsPrefix+"/"+orgs[0]+"/department-templates", strings.NewReader(tmplBody))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+admin)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	var out idResult
	if err := json.Unmarshal(rec.Body.Bytes(), &out); rec.Code != http.StatusCreated || err != nil {
		return nil, fmt.Errorf("creating the template: %d %.300s", rec.Code, rec.Body)
	}
	return &isolationSetup{s: s, h: s, admin: admin, carol: carol, orgs: orgs, tmplID: out.Result.ID}, nil
}

// writeRound is one round of the busy admin of BenchmarkRealmIsolation:
// the template instantiated in the first organization and deleted again,
// so that the organization stays the same size, and a plain department
// in another organization each round.
func (is *isolationSetup) writeRound(b *testing.B, i int) {
	rec := serve(b, is.h, http.MethodPost, scaleOrgsPrefix+"/"+is.orgs[0]+"/departments", is.admin,
		fmt.Sprintf(`{"templateId":%q}`, is.tmplID), http.StatusCreated)
	serve(b, is.h, http.MethodDelete, scaleOrgsPrefix+"/"+is.orgs[0]+"/departments/"+idOf(b, rec), is.admin, "", http.StatusOK)
	serve(b, is.h, http.MethodPost, scaleOrgsPrefix+"/"+is.orgs[1+i%(len(is.orgs)-1)]+"/departments", is.admin,
		fmt.Sprintf(`{"name":"Busy %d"}`, i), http.StatusCreated)
}

// decide is one decision of BenchmarkRealmIsolation, in realm small.
func (is *isolationSetup) decide(b *testing.B) {
	serve(b, is.h, http.MethodPost, smallAuthorize, is.carol, scaleDecision, http.StatusOK)
}

// BenchmarkIsolationParts measures, alone, the two sides of
// BenchmarkRealmIsolation: one round of the busy writer and one decision
// in realm small, so that their allocations can be read per operation.
func BenchmarkIsolationParts(b *testing.B) {
	is := newIsolationSetup(b)
	b.Run("write-round", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			is.writeRound(b, i)
			i++
		}
	})
	b.Run("decision", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			is.decide(b)
		}
	})
	b.Run("decision-http", func(b *testing.B) {
		srv := httptest.NewServer(is.s)
		defer srv.Close()
		remote := *is
		remote.h = overHTTP{client: srv.Client(), base: srv.URL}
		b.ReportAllocs()
		for b.Loop() {
			remote.decide(b)
		}
	})
}

// BenchmarkRealmIsolation measures decision latency in realm small, quiet
// and while realm big's admin instantiates a 1,000-department template,
// deletes it again and creates departments, back to back from one
// goroutine: in process; over loopback HTTP connections (one for the
// decisions, one for the admin) to a server in this process, whose
// scheduler then also runs the clients' goroutines; and over loopback to
// the server in a process of its own (the test binary started again, see
// runIsolationServer), as clients of the binary see it. The two phases
// alternate in windows of equal length, so that whatever else the machine
// does weighs on both alike. It reports the p50, p99, p99.9 and maximum of
// each phase, the ratio of the busy p99 to the quiet p99 (target: at most
// 2), and the writes realm big made (writes-in-B): while realm small is
// served, the store paces big's writes to their share of the machine
// (mockserver/internal/store/fair.go), so that figure is what the pacing left the
// admin.
func BenchmarkRealmIsolation(b *testing.B) {
	is := newIsolationSetup(b)
	b.Run("in-process", func(b *testing.B) { is.measure(b) })
	b.Run("http", func(b *testing.B) {
		srv := httptest.NewServer(is.s)
		defer srv.Close()
		remote := *is
		remote.h = overHTTP{client: srv.Client(), base: srv.URL}
		remote.measure(b)
	})
	b.Run("http-process", func(b *testing.B) {
		startIsolationServer(b).measure(b)
	})
}

// measure runs BenchmarkRealmIsolation's windows through is.h. The
// runtime's counters are reported when the server runs in this process
// (is.s is set).
func (is *isolationSetup) measure(b *testing.B) {
	const (
		windows   = 10
		perWindow = 2000
	)
	for b.Loop() {
		quiet := make([]time.Duration, 0, windows*perWindow)
		busy := make([]time.Duration, 0, windows*perWindow)
		var writes int64
		var rt [2]runtimeCounters // the runtime's view of the quiet and the busy windows
		window := func(lat []time.Duration, phase int) []time.Duration {
			before := readRuntimeCounters()
			for range perWindow {
				start := time.Now()
				is.decide(b)
				lat = append(lat, time.Since(start))
			}
			rt[phase].add(readRuntimeCounters(), before)
			return lat
		}
		for range windows {
			quiet = window(quiet, 0)

			var (
				stop atomic.Bool
				wg   sync.WaitGroup
				n    atomic.Int64
			)
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					is.writeRound(b, int(writes)+i)
					n.Add(3)
				}
			})
			busy = window(busy, 1)
			stop.Store(true)
			wg.Wait()
			writes += n.Load()
		}
		slices.Sort(quiet)
		slices.Sort(busy)
		pct := func(lat []time.Duration, p float64) float64 {
			return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
		}
		b.ReportMetric(pct(quiet, 0.50), "quiet-p50-µs")
		b.ReportMetric(pct(quiet, 0.99), "quiet-p99-µs")
		b.ReportMetric(pct(quiet, 0.999), "quiet-p999-µs")
		b.ReportMetric(pct(quiet, 1), "quiet-max-µs")
		b.ReportMetric(pct(busy, 0.50), "busy-p50-µs")
		b.ReportMetric(pct(busy, 0.99), "busy-p99-µs")
		b.ReportMetric(pct(busy, 0.999), "busy-p999-µs")
		b.ReportMetric(pct(busy, 1), "busy-max-µs")
		b.ReportMetric(pct(busy, 0.99)/pct(quiet, 0.99), "p99-ratio")
		b.ReportMetric(float64(writes), "writes-in-B")
		for i, phase := range []string{"quiet", "busy"} {
			if is.s == nil {
				break // the server's runtime is another process's
			}
			b.ReportMetric(float64(rt[i].gcs), phase+"-gcs")
			b.ReportMetric(rt[i].assist*1e3, phase+"-assist-ms")
			b.ReportMetric(rt[i].mark*1e3, phase+"-mark-ms")
			b.ReportMetric(rt[i].pauses.quantile(0.99)*1e6, phase+"-pause-p99-µs")
			b.ReportMetric(rt[i].sched.quantile(0.99)*1e6, phase+"-sched-p99-µs")
		}
	}
}

// runtimeCounters are what the runtime reports of one phase of
// BenchmarkRealmIsolation: garbage collections begun, CPU seconds of mark
// assists (goroutines made to mark as they allocate) and of all marking,
// and the distributions of stop-the-world pauses and of the time
// goroutines waited to run. Differences of readRuntimeCounters add up in
// it.
type runtimeCounters struct {
	gcs           uint64
	assist, mark  float64
	pauses, sched histogram
}

// histogram is a runtime/metrics histogram, its counts per bucket.
type histogram struct {
	counts  []uint64
	buckets []float64
}

// quantile returns the upper bound of the bucket that holds quantile q,
// or 0 when the histogram is empty.
func (h histogram) quantile(q float64) float64 {
	var total uint64
	for _, c := range h.counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if float64(seen) >= q*float64(total) {
			return h.buckets[i+1]
		}
	}
	return h.buckets[len(h.buckets)-1]
}

var runtimeSamples = []string{"/gc/cycles/total:gc-cycles", "/cpu/classes/gc/mark/assist:cpu-seconds",
	"/cpu/classes/gc/total:cpu-seconds", "/sched/pauses/total/gc:seconds", "/sched/latencies:seconds"}

// readRuntimeCounters reads the runtime's counters since the process began.
func readRuntimeCounters() runtimeCounters {
	s := make([]metrics.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	hist := func(v metrics.Value) histogram {
		h := v.Float64Histogram()
		return histogram{counts: slices.Clone(h.Counts), buckets: h.Buckets}
	}
	return runtimeCounters{gcs: s[0].Value.Uint64(), assist: s[1].Value.Float64(), mark: s[2].Value.Float64(),
		pauses: hist(s[3].Value), sched: hist(s[4].Value)}
}

// add adds to c the difference of two readings, now and before.
func (c *runtimeCounters) add(now, before runtimeCounters) {
	c.gcs += now.gcs - before.gcs
	c.assist += now.assist - before.assist
	c.mark += now.mark - before.mark
	for _, h := range []struct{ into, now, before *histogram }{{&c.pauses, &now.pauses, &before.pauses}, {&c.sched, &now.sched, &before.sched}} {
		if h.into.counts == nil {
			h.into.counts, h.into.buckets = make([]uint64, len(h.now.counts)), h.now.buckets
		}
		for i := range h.now.counts {
			h.into.counts[i] += h.now.counts[i] - h.before.counts[i]
		}
	}
}

// BenchmarkRealmMark measures one forced garbage collection with realm big
// of scaleFixture(1000) loaded and nothing else running: the collector's
// marking of the realm, which every cycle pays while other realms' decisions
// run (BenchmarkRealmIsolation).
func BenchmarkRealmMark(b *testing.B) {
	s := scaleServer(b, scaleFixture(1000))
	runtime.GC()
	for b.Loop() {
		runtime.GC()
	}
	// The heap the collector scans, deterministic where the time is not
	// on a shared machine: what a cycle must read for pointers, and all of
	// the live heap.
	m := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	b.ReportMetric(float64(m[0].Value.Uint64())/(1<<20), "scan-MiB")
	b.ReportMetric(float64(m[1].Value.Uint64())/(1<<20), "live-MiB")
	runtime.KeepAlive(s)
}

// overHTTP is an http.Handler that sends each request on to the server at
// base over real connections and copies its answer back, so that serve's
// requests can cross the loopback interface.
type overHTTP struct {
	client *http.Client
	base   string
}

func (o overHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, o.base+r.URL.RequestURI(), r.Body)
	if err != nil {
		panic(err) // the benchmark built r: a bug, not a measurement
	}
	out.Header = r.Header
	resp, err := o.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	// Read into the recorder's buffer: io.Copy would allocate 32 KiB per
	// request here, in the server's process, three quarters of what a
	// decision over loopback allocated, and so set the collector's pace
	// for a server whose real clients live in processes of their own.
	if rec, ok := w.(*httptest.ResponseRecorder); ok && rec.Body != nil {
		_, _ = rec.Body.ReadFrom(resp.Body)
		return
	}
	_, _ = io.Copy(w, resp.Body)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// idResult is an answer {"result": {"id": ...}}.
type idResult struct {
	Result struct {
		ID string `json:"id"`
	} `json:"result"`
}

// idOf returns result.id of a recorded answer.
func idOf(tb testing.TB, rec *httptest.ResponseRecorder) string {
	var out idResult
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Result.ID == "" {
		tb.Fatalf("no result.id in %.300s", rec.Body)
	}
	return out.Result.ID
}
