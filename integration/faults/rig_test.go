package faults_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

const (
	realm    = "acme"
	clientID = "orders-api"
	// callTimeout is every faulted call's deadline (its context's): short,
	// so that the suite takes seconds.
	callTimeout = 200 * time.Millisecond
	// clientTimeout is the clients' WithTimeout, which bounds the calls
	// made without a fault (the references, the recoveries, the probes):
	// long enough for a loaded machine to answer a clean call.
	clientTimeout = 2 * time.Second
	// slack is how late past its deadline a call may return
	// (the README's fail-closed rule 10).
	slack = 50 * time.Millisecond
	// coolDown is the breaker's.
	coolDown = 50 * time.Millisecond
	// breakerTimeout is the WithTimeout of the clients that watch the
	// breaker: their faulted calls run out of it (which counts against the
	// breaker, as a caller's earlier deadline does not), and their probe,
	// the first clean call after the fault, must fit in it on a loaded
	// machine (200 ms did not always).
	breakerTimeout = 400 * time.Millisecond
	// restartCallTimeout bounds TestGatewayRestart's calls: a hang guard,
	// not a deadline any call should meet.
	restartCallTimeout = 10 * time.Second
)

// es256Tokens makes a test's reference server sign access tokens ES256,
// with the P-256 key every realm has from the start, rather than RS256 (the
// default, as Keycloak's) with a 2048-bit RSA key made on the realm's first
// token, 70 to 110 ms of CPU under -race per server, and an RSA signature
// per token. No fault test is about the token's algorithm; integration/interop proves the default with OpenID Connect
// libraries. Each server still makes keys of its own: a key shared between
// servers would make one accept another's tokens.
var es256Tokens = mockserver.WithAccessTokenAlgorithm("ES256")

// fixture is realm acme: alice is a clerk, who may read orders and invoices
// and nothing else, and is assigned to Acme EU/Sales.
var fixture = mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
	Name:  realm,
	Roles: []mockserver.FixtureRole{{Name: "clerk"}},
	Users: []mockserver.FixtureUser{{Username: "alice", Roles: []string{"clerk"}}},
	Clients: []mockserver.FixtureClient{{
		ClientID: clientID, Secret: "orders-secret",
		Resources: []mockserver.FixtureResource{
			{Name: "orders", Scopes: []string{"read", "write", "delete"}},
			{Name: "invoices", Scopes: []string{"read", "pay"}},
		},
		Permissions: []mockserver.FixturePermission{
			{Name: "clerks read orders", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"clerk"}},
			{Name: "clerks read invoices", Resource: "invoices", Scopes: []string{"read"}, Roles: []string{"clerk"}},
		},
	}},
	Organizations: []mockserver.FixtureOrganization{{Name: "Acme EU", Alias: "eu",
		Departments: []mockserver.FixtureDepartment{{Name: "Sales", Alias: "sales", Users: []string{"alice"}}}}},
}}}

// many is what CheckMany asks: five pairs, sent as three requests (the
// clients' batch size is 2), two of them GRANT and three DENY.
var many = []pep.Resource{
	{Name: "orders", Scopes: []string{"read", "write", "delete"}},
	{Name: "invoices", Scopes: []string{"read", "pay"}},
}

// answer is what one call returned.
type answer struct {
	decisions []pep.Decision // Check and CheckMany
	org       pep.OrganizationContext
	err       error
}

// call is one of the client's calls, made the same way every time.
type call struct {
	name string
	do   func(ctx context.Context, c *pep.Client, opts ...pep.CallOption) answer
}

var calls = []call{
	{"Check", func(ctx context.Context, c *pep.Client, opts ...pep.CallOption) answer {
		d, err := c.Check(ctx, "orders", "read", opts...)
		return answer{decisions: []pep.Decision{d}, err: err}
	}},
	{"CheckMany", func(ctx context.Context, c *pep.Client, opts ...pep.CallOption) answer {
		res, err := c.CheckMany(ctx, many, opts...)
		return answer{decisions: res.Decisions, err: err}
	}},
	{"Organizations", func(ctx context.Context, c *pep.Client, _ ...pep.CallOption) answer {
		oc, err := c.Organizations(ctx)
		return answer{org: oc, err: err}
	}},
}

var tokenKinds = []string{"Bearer", "DPoP"}

// rig is a reference server behind a Toxiproxy proxy, both on loopback,
// closed when the test ends. The server's issuer is the proxy's URL: the
// clients address the proxy, and their DPoP proofs name it.
type rig struct {
	srv      *mockserver.Server
	toxiprox *toxiproxy.ApiServer
	proxy    *toxiproxy.Proxy
	url      string
	tr       *http.Transport
	hc       *http.Client
}

func newRig(t *testing.T) *rig {
	t.Helper()
	gw, ln := gatewaytest.Listen(t)
	tp := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(tp, "gateway", "127.0.0.1:0", gw.Addr)
	require.NoError(t, tp.Collection.Add(proxy, true))
	t.Cleanup(func() { _ = tp.Collection.Clear() })
	url := "http://" + proxy.Listen
	srv, err := mockserver.New(mockserver.WithFixture(fixture), mockserver.WithIssuer(url), es256Tokens)
	require.NoError(t, err)
	gw.Serve(ln, srv)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &rig{srv: srv, toxiprox: tp, proxy: proxy, url: url, tr: tr, hc: &http.Client{Transport: tr}}
}

// heal takes the fault away: it tears down the proxy that carries the
// toxic, whole (its listener, its connections and their links), and starts
// a proxy without toxics on the same address, so that the clients, not
// rebuilt, keep their URL and their DPoP proofs their htu. It empties the
// clients' pool of idle connections, which all went through the torn-down
// proxy: the first call after heal dials the new one, as after a faulty
// middlebox is replaced.
//
// It never calls Toxiproxy's RemoveToxic: in v2.5.0 (the newest the module
// proxy has) that waits, holding the proxy's toxic collection, for the
// toxic's goroutine to take an interrupt, which a goroutine blocked on a
// channel nobody reads never does (Shopify/toxiproxy#760); it hung this
// suite to its 10-minute timeout. Stopping a proxy waits for nothing but
// its accept loop.
func (r *rig) heal() error {
	if err := r.toxiprox.Collection.Remove(r.proxy.Name); err != nil {
		return err
	}
	r.tr.CloseIdleConnections()
	proxy := toxiproxy.NewProxy(r.toxiprox, r.proxy.Name, r.proxy.Listen, r.proxy.Upstream)
	if err := r.toxiprox.Collection.Add(proxy, true); err != nil {
		return fmt.Errorf("a proxy without the toxic on %s: %w", r.proxy.Listen, err)
	}
	r.proxy = proxy
	return nil
}

// client returns an orders-api client holding a token of alice of the
// given kind: small deadlines, tight retries, a quick breaker, a batch size
// of two.
func (r *rig) client(kind string, opts ...pep.Option) (*pep.Client, error) {
	c, err := hangguard.NewPep(r.url, realm, clientID, append([]pep.Option{
		pep.WithHTTPClient(r.hc), pep.WithTimeout(clientTimeout), pep.WithRetry(2, 5*time.Millisecond, 20*time.Millisecond),
		pep.WithBreaker(2, coolDown), pep.WithBatchSize(2),
	}, opts...)...)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "Bearer":
		tok, err := r.srv.IssueToken(realm, "alice")
		if err != nil {
			return nil, err
		}
		c.SetToken(tok)
	case "DPoP":
		signer, err := dpop.GenerateKey()
		if err != nil {
			return nil, err
		}
		tok, err := r.srv.IssueToken(realm, "alice", mockserver.TokenDPoPBinding(signer.Thumbprint()))
		if err != nil {
			return nil, err
		}
		c.SetDPoPToken(tok, signer)
	default:
		return nil, fmt.Errorf("unknown token kind %q", kind)
	}
	return c, nil
}

// addToxic puts a toxic of typ with attrs (JSON) on stream.
func (r *rig) addToxic(name, typ, stream, attrs string) error {
	_, err := r.proxy.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
		`{"name": %q, "type": %q, "stream": %q, "toxicity": 1, "attributes": %s}`, name, typ, stream, attrs)))
	return err
}

// lateness is when a call returned, measured against its deadline.
type lateness struct {
	// late is how long after its deadline the call returned (negative:
	// before it).
	late time.Duration
	// stolen is how long, between the deadline and the return, the
	// process could not run a goroutine that was ready (the stall clock's
	// measure): on a loaded machine (2 cores shared by several test runs,
	// the race detector) that is tens or hundreds of milliseconds, during
	// which no client can do anything.
	stolen time.Duration
}

// over is what the client itself added past its deadline: late minus the
// time stolen from the process.
func (l lateness) over() time.Duration { return l.late - l.stolen }

func (l lateness) String() string {
	return fmt.Sprintf("%v (%v stalled)", l.late.Round(time.Millisecond), l.stolen.Round(time.Millisecond))
}

// stallClock measures the time the process could not run a ready goroutine:
// its goroutine asks to wake every millisecond, and every wake-up later
// than that adds its delay to the stolen total.
type stallClock struct {
	reads chan chan time.Duration
	stop  chan struct{}
	done  chan struct{}
}

const stallPeriod = time.Millisecond

func startStallClock(t *testing.T) *stallClock {
	m := &stallClock{reads: make(chan chan time.Duration), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(stallPeriod)
		defer tick.Stop()
		var stolen time.Duration
		last := time.Now()
		account := func() {
			now := time.Now()
			if gap := now.Sub(last); gap > 2*stallPeriod {
				stolen += gap - stallPeriod
			}
			last = now
		}
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
				account()
			case reply := <-m.reads:
				account()
				reply <- stolen
			}
		}
	}()
	t.Cleanup(func() { close(m.stop); <-m.done })
	return m
}

// read returns the time stolen so far, up to the moment the clock's
// goroutine ran to answer.
func (m *stallClock) read() time.Duration {
	reply := make(chan time.Duration, 1)
	m.reads <- reply
	return <-reply
}

// timed makes the call with a context whose deadline is callTimeout away,
// and says how late it returned.
func timed(ctx context.Context, m *stallClock, cl call, c *pep.Client, opts ...pep.CallOption) (answer, lateness) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return measure(ctx, ctx, m, cl, c, opts...)
}

// timedByClient makes the call with a context without a deadline, for a
// client whose own WithTimeout is breakerTimeout, and says how late it
// returned. A call that runs out of the client's own timeout counts against
// the breaker; one cut short by the caller's earlier deadline does not.
func timedByClient(ctx context.Context, m *stallClock, cl call, c *pep.Client, opts ...pep.CallOption) (answer, lateness) {
	clock, cancel := context.WithTimeout(ctx, breakerTimeout)
	defer cancel()
	return measure(ctx, clock, m, cl, c, opts...)
}

// measure makes the call with ctx and measures it against clock's deadline.
func measure(ctx, clock context.Context, m *stallClock, cl call, c *pep.Client, opts ...pep.CallOption) (answer, lateness) {
	deadline, _ := clock.Deadline()
	stop := make(chan struct{})
	atDeadline := make(chan time.Duration, 1)
	go func() {
		select {
		case <-clock.Done():
		case <-stop:
		}
		atDeadline <- m.read()
	}()
	a := cl.do(ctx, c, opts...)
	returned := time.Now()
	close(stop)
	stolenBefore := <-atDeadline // at the deadline, or at the return if earlier
	l := lateness{late: returned.Sub(deadline)}
	if l.late > 0 {
		l.stolen = m.read() - stolenBefore
	}
	return a, l
}

// verdict compares got with ref, the reference server's answer to the same
// call without the fault. It returns the outcome ("answered", "fail-closed",
// "k/n fail-closed") and every breach of the fail-closed rules.
func verdict(ref, got answer) (string, []string) {
	var bad []string
	if ref.decisions == nil { // Organizations does not fail closed: it errs
		switch {
		case got.err == nil:
			if fmt.Sprint(got.org) != fmt.Sprint(ref.org) {
				bad = append(bad, fmt.Sprintf("organizations %+v, want %+v", got.org, ref.org))
			}
			return "answered", bad
		case errors.Is(got.err, pep.ErrUnavailable):
			return "error (ErrUnavailable)", bad
		default:
			return "error", append(bad, fmt.Sprintf("error %v does not match ErrUnavailable", got.err))
		}
	}
	if got.err != nil {
		bad = append(bad, fmt.Sprintf("error %v: a fault is not the caller's error", got.err))
	}
	if len(got.decisions) != len(ref.decisions) {
		return "?", append(bad, fmt.Sprintf("%d decisions, want %d", len(got.decisions), len(ref.decisions)))
	}
	failed := 0
	for i, d := range got.decisions {
		want := ref.decisions[i]
		if d.Resource != want.Resource || d.Scope != want.Scope {
			bad = append(bad, fmt.Sprintf("decision %d is %s/%s, want %s/%s", i, d.Resource, d.Scope, want.Resource, want.Scope))
			continue
		}
		if d.Allowed() && !want.Allowed() {
			bad = append(bad, fmt.Sprintf("FALSE GRANT of %s/%s", d.Resource, d.Scope))
		}
		switch {
		case d.Cause != nil:
			failed++
			if d.Status != pep.Deny {
				bad = append(bad, fmt.Sprintf("%s/%s failed closed as %v", d.Resource, d.Scope, d.Status))
			}
			if !errors.Is(d.Cause, pep.ErrUnavailable) {
				bad = append(bad, fmt.Sprintf("%s/%s: cause %v does not match ErrUnavailable", d.Resource, d.Scope, d.Cause))
			}
		case d.Status != want.Status:
			bad = append(bad, fmt.Sprintf("%s/%s is %v, the reference says %v", d.Resource, d.Scope, d.Status, want.Status))
		}
	}
	switch failed {
	case 0:
		return "answered", bad
	case len(got.decisions):
		return "fail-closed (ErrUnavailable)", bad
	}
	return fmt.Sprintf("%d/%d fail-closed", failed, len(got.decisions)), bad
}

// refusedByBreaker says how much of the answer the open (or half-open)
// breaker refused: none, some (the other requests of a CheckMany went
// through, one of them as the probe) or all of it.
func refusedByBreaker(a answer) (some, all bool) {
	if a.decisions == nil {
		open := errors.Is(a.err, pep.ErrCircuitOpen)
		return open, open
	}
	n := 0
	for _, d := range a.decisions {
		if errors.Is(d.Cause, pep.ErrCircuitOpen) {
			n++
		}
	}
	return n > 0, n > 0 && n == len(a.decisions)
}

// ranOutOfTime reports whether every decision of a failed closed for its
// call's deadline (a call without decisions: whether its error matches
// context.DeadlineExceeded).
func ranOutOfTime(a answer) bool {
	if a.decisions == nil {
		return errors.Is(a.err, context.DeadlineExceeded)
	}
	for _, d := range a.decisions {
		if !errors.Is(d.Cause, context.DeadlineExceeded) {
			return false
		}
	}
	return true
}

// untilPastBreaker calls cl every 5 ms until no part of the answer is the
// breaker's refusal, for at most 5 s, and returns that answer, how many
// gateway requests the client had sent before it, and the pairs
// ("resource/scope") the gateway answered in the calls before it (the
// probe of a CheckMany goes through while its other requests are refused).
// A call refused whole must send nothing.
func untilPastBreaker(ctx context.Context, cl call, c *pep.Client, opts ...pep.CallOption) (answer, uint64, map[string]bool, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	answered := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); <-tick.C {
		before := c.Stats().GatewayRequests
		a := cl.do(ctx, c, opts...)
		some, all := refusedByBreaker(a)
		if !some {
			return a, before, answered, nil
		}
		if after := c.Stats().GatewayRequests; all && after != before {
			return a, before, answered, fmt.Errorf("the open breaker sent %d requests", after-before)
		}
		for _, d := range a.decisions {
			if d.Cause == nil {
				answered[d.Resource+"/"+d.Scope] = true
			}
		}
	}
	return answer{}, 0, answered, errors.New("the breaker stayed open for 5 s")
}
