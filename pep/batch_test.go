package pep_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

func TestCheckManyDecisionsAndStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		resources  []pep.Resource
		wantStatus pep.Status
		want       []string // "resource/scope=STATUS" in order
	}{
		{
			name:       "all granted",
			resources:  []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "invoices", Scopes: []string{"read"}}},
			wantStatus: pep.Grant,
			want:       []string{"orders/read=GRANT", "invoices/read=GRANT"},
		},
		{
			name:       "one error answer makes ERROR",
			resources:  []pep.Resource{{Name: "orders", Scopes: []string{"read", "fly"}}},
			wantStatus: pep.Error,
			want:       []string{"orders/read=GRANT", "orders/fly=ERROR"},
		},
		{
			name:       "a deny wins over an error",
			resources:  []pep.Resource{{Name: "orders", Scopes: []string{"fly", "write", "read"}}},
			wantStatus: pep.Deny,
			want:       []string{"orders/fly=ERROR", "orders/write=DENY", "orders/read=GRANT"},
		},
		{
			name: "duplicates removed, first position kept",
			resources: []pep.Resource{
				{Name: "orders", Scopes: []string{"read", "read"}},
				{Name: "invoices", Scopes: []string{"read"}},
				{Name: "orders", Scopes: []string{"read"}},
			},
			wantStatus: pep.Grant,
			want:       []string{"orders/read=GRANT", "invoices/read=GRANT"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, c := startWithAlice(t)
			r := checkedMany(t, c, t.Context(), tt.resources)
			assert.Equal(t, tt.wantStatus, r.Status)
			assert.Equal(t, tt.wantStatus == pep.Grant, r.Allowed())
			assert.Equal(t, tt.want, summarize(r.Decisions))
			for _, d := range r.Decisions {
				requireGatewayCause(t, d)
			}
			// Each pair is sent once, in the order of the decisions.
			var sent []string
			for _, w := range tt.want {
				sent = append(sent, strings.Split(w, "=")[0])
			}
			assert.Equal(t, sent, g.last(t).pairs())
		})
	}
}

func summarize(ds []pep.Decision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Resource+"/"+d.Scope+"="+d.Status.String())
	}
	return out
}

func TestCheckManyInputErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		resources []pep.Resource
		wantErr   string
	}{
		{"nil", nil, "pep: invalid argument: at least one resource is needed"},
		{"empty", []pep.Resource{}, "pep: invalid argument: at least one resource is needed"},
		{"no name", []pep.Resource{{Scopes: []string{"read"}}}, "pep: invalid argument: resource 0 has no name"},
		{"no scopes", []pep.Resource{{Name: "orders"}}, `pep: invalid argument: resource 0 has no scopes`},
		{"empty scope", []pep.Resource{{Name: "orders", Scopes: []string{"read", ""}}}, `pep: invalid argument: resource 0 has an empty scope`},
		{"wildcard", []pep.Resource{{Name: "*", Scopes: []string{"read"}}}, `pep: invalid argument: resource 0 is "*", which only ListGranted may ask for`},
		{"wildcard among others", []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "*", Scopes: []string{"read"}}},
			`pep: invalid argument: resource 1 is "*", which only ListGranted may ask for`},
	}
	g := startReference(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := g.newClient(t)
			c.SetToken(g.token(t, "alice"))
			r, err := c.CheckMany(t.Context(), tt.resources)
			require.EqualError(t, err, tt.wantErr)
			require.ErrorIs(t, err, pep.ErrInvalidArgument)
			assert.False(t, r.Allowed())
			for _, d := range r.Decisions {
				assert.False(t, d.Allowed())
				require.ErrorIs(t, d.Cause, pep.ErrInvalidArgument)
			}
			assert.Equal(t, pep.Deny, r.Status)
			assert.Equal(t, 0, g.count())
		})
	}
}

func TestCheckManyAsksOnlyForUncachedPairs(t *testing.T) {
	t.Parallel()
	g, c := startWithAlice(t)
	checked(t, c, "orders", "read")
	checked(t, c, "invoices", "pay")

	r, err := c.CheckMany(t.Context(), []pep.Resource{
		{Name: "orders", Scopes: []string{"read", "write"}},
		{Name: "invoices", Scopes: []string{"read", "pay"}},
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"orders/write", "invoices/read"}, g.last(t).pairs())
	assert.Equal(t, []string{"orders/read=GRANT", "orders/write=DENY", "invoices/read=GRANT", "invoices/pay=DENY"}, summarize(r.Decisions))
	var cached []bool
	for _, d := range r.Decisions {
		cached = append(cached, d.Cached)
	}
	assert.Equal(t, []bool{true, false, false, true}, cached)

	// Everything is cached now: no request at all.
	before := g.count()
	r = checkedMany(t, c, t.Context(), []pep.Resource{{Name: "invoices", Scopes: []string{"read", "pay"}}, {Name: "orders", Scopes: []string{"write"}}})
	assert.Equal(t, pep.Deny, r.Status)
	assert.Equal(t, before, g.count())
}

// bulkCatalog returns bulk-api's resources r00..r24 (scopes s0..s9, 250
// pairs) and what alice gets for each, "resource/scope=STATUS" in order:
// clerks may use the even scopes.
func bulkCatalog() ([]pep.Resource, []string) {
	var resources []pep.Resource
	var want []string
	for i := range 25 {
		name := fmt.Sprintf("r%02d", i)
		var scopes []string
		for j := range 10 {
			scope := fmt.Sprintf("s%d", j)
			scopes = append(scopes, scope)
			status := "DENY"
			if j%2 == 0 {
				status = "GRANT"
			}
			want = append(want, name+"/"+scope+"="+status)
		}
		resources = append(resources, pep.Resource{Name: name, Scopes: scopes})
	}
	return resources, want
}

// TestBatching: 250 pairs in batches of 100 go in three requests, each
// pair sent once, and the decisions keep request order; a chunk that
// fails (the hook answers the one holding r03, pairs r00..r09, with a
// 503; the server the others) fails only its own pairs, closed, and the
// good chunks are cached.
func TestBatching(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	resources, want := bulkCatalog()
	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		body, _ := readBodyString(r)
		if strings.Contains(body, `"r03"`) {
			writeError(w, http.StatusServiceUnavailable, "shard down")
			return true
		}
		return false
	})
	c := g.newClientOf(t, bulkClient, pep.WithBatchSize(100), noRetry)
	c.SetToken(g.token(t, "alice"))
	r := checkedMany(t, c, t.Context(), resources)
	assert.Equal(t, pep.Deny, r.Status)
	require.Len(t, r.Decisions, 250)
	for i, d := range r.Decisions {
		assert.True(t, strings.HasPrefix(want[i], d.Resource+"/"+d.Scope+"="), "decision %d is of %s", i, want[i])
		if i < 100 {
			assert.False(t, d.Allowed(), "pair %d is in the failed chunk", i)
			require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
			continue
		}
		assert.NoError(t, d.Cause, "pair %d", i)
		assert.Equal(t, want[i], summarize([]pep.Decision{d})[0])
	}
	assert.Equal(t, uint64(100), c.Stats().FailClosed)
	assert.Equal(t, 150, c.Stats().CacheEntries, "the good chunks are cached")

	reqs := g.received()
	require.Len(t, reqs, 3, "250 pairs in batches of 100")
	var sent []string
	var sizes []int
	for _, rq := range reqs {
		sizes = append(sizes, len(rq.pairs()))
		sent = append(sent, rq.pairs()...)
	}
	slices.Sort(sizes)
	assert.Equal(t, []int{50, 100, 100}, sizes)
	assert.Len(t, sent, 250)
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(sent))), 250, "every pair sent exactly once")
}

func TestManyScopesOfOneResourceAreSplit(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClientOf(t, bulkClient)
	c.SetToken(g.token(t, "alice"))
	r := checkedMany(t, c, t.Context(), []pep.Resource{{Name: "reports", Scopes: bulkScopes(60)}})
	assert.True(t, r.Allowed(), "the gateway refuses more than 50 scopes per resource entry; clerks use every scope of reports")
	res := g.last(t).Body.Resources
	require.Len(t, res, 2)
	assert.Len(t, res[0].Scopes, 50)
	assert.Len(t, res[1].Scopes, 10)
}

func TestConcurrentIdenticalChecksShareOneRequest(t *testing.T) {
	t.Parallel()
	const callers = 50
	g := startReference(t)
	release := make(chan struct{})
	g.setHook(func(_ http.ResponseWriter, _ *http.Request, _ int) bool {
		select { // hold the one request until every caller waits on it
		case <-release:
		case <-g.closing:
		}
		return false // then the server answers it
	})
	var waiting atomic.Int64
	c := g.newClient(t, pep.WithFlightWaitHook(func() {
		if waiting.Add(1) == callers {
			close(release)
		}
	}))
	c.SetToken(g.token(t, "alice"))

	var wg sync.WaitGroup
	results := make([]pep.Decision, callers)
	for i := range callers {
		wg.Go(func() {
			d, err := c.Check(t.Context(), "orders", "read")
			assert.NoError(t, err)
			results[i] = d
		})
	}
	wg.Wait()
	for _, d := range results {
		requireGatewayDecision(t, d, pep.Grant)
	}
	assert.Equal(t, 1, g.count(), "exactly one gateway request")
	assert.Equal(t, uint64(callers-1), c.Stats().Coalesced)
}

func TestDifferentTokensAreNotCoalesced(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	alice, bob := g.token(t, "alice"), g.token(t, "bob")
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	g.setHook(func(_ http.ResponseWriter, _ *http.Request, _ int) bool {
		arrived <- struct{}{}
		select { // hold each request until both have arrived
		case <-release:
		case <-g.closing:
		}
		return false // then the server answers it
	})
	c := g.newClient(t)
	var wg sync.WaitGroup
	got := map[string]pep.Status{}
	var mu sync.Mutex
	for _, tok := range []string{alice, bob} {
		wg.Go(func() {
			d, err := c.Check(pep.WithToken(t.Context(), tok), "orders", "write")
			assert.NoError(t, err)
			mu.Lock()
			got[tok] = d.Status
			mu.Unlock()
		})
	}
	<-arrived // both requests reach the gateway while neither is answered
	<-arrived
	close(release)
	wg.Wait()
	assert.Equal(t, map[string]pep.Status{alice: pep.Deny, bob: pep.Grant}, got)
	assert.Equal(t, 2, g.count())
	assert.Zero(t, c.Stats().Coalesced)
}

func readBodyString(r *http.Request) (string, error) {
	b, err := io.ReadAll(r.Body)
	return string(b), err
}
