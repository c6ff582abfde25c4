package pep_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

func perms(pairs ...string) []pep.Permission {
	var out []pep.Permission
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, pep.Permission{Resource: pairs[i], Scope: pairs[i+1], Status: pep.Grant})
	}
	return out
}

// TestListGranted: in the shop fixture alice reads orders and invoices, bob
// reads and writes orders, and nobody deletes orders or pays invoices.
func TestListGranted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		user      string
		resources []pep.Resource
		want      []pep.Permission
		wantSent  []string
	}{
		{
			name:     "nil lists every permission of the client",
			user:     "bob",
			want:     perms("orders", "read", "orders", "write"),
			wantSent: []string{"*/*"},
		},
		{
			name:      "empty scopes list every scope of a resource",
			user:      "alice",
			resources: []pep.Resource{{Name: "invoices"}},
			want:      perms("invoices", "read"),
			wantSent:  []string{"invoices/*"},
		},
		{
			name:      "specific pairs keep request order",
			user:      "alice",
			resources: []pep.Resource{{Name: "invoices", Scopes: []string{"pay", "read"}}, {Name: "orders", Scopes: []string{"write", "read"}}},
			want:      perms("invoices", "read", "orders", "read"),
			wantSent:  []string{"invoices/pay", "invoices/read", "orders/write", "orders/read"},
		},
		{
			name:      "wildcard and specific pairs together, no duplicates",
			user:      "bob",
			resources: []pep.Resource{{Name: "orders", Scopes: []string{"write"}}, {Name: "orders"}},
			want:      perms("orders", "write", "orders", "read"),
			wantSent:  []string{"orders/write", "orders/*"},
		},
		{
			name:      "the wildcard resource lists every resource's grants",
			user:      "alice",
			resources: []pep.Resource{{Name: "*"}},
			want:      perms("orders", "read", "invoices", "read"),
			wantSent:  []string{"*/*"},
		},
		{
			name:      "the wildcard resource with a scope",
			user:      "bob",
			resources: []pep.Resource{{Name: "*", Scopes: []string{"write"}}},
			want:      perms("orders", "write"),
			wantSent:  []string{"*/write"},
		},
		{
			name:      "the wildcard resource with an unknown scope",
			user:      "alice",
			resources: []pep.Resource{{Name: "*", Scopes: []string{"no-such-scope"}}},
			want:      nil,
			wantSent:  []string{"*/no-such-scope"},
		},
		{
			name:      "nothing granted",
			user:      "alice",
			resources: []pep.Resource{{Name: "orders", Scopes: []string{"write", "delete"}}},
			want:      nil,
			wantSent:  []string{"orders/write", "orders/delete"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t)
			c.SetToken(g.token(t, tt.user))
			got := testkit.Must(c.ListGranted(t.Context(), tt.resources))(t)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantSent, g.last(t).pairs())
		})
	}
}

func TestListGrantedCachesWildcardAnswersAsPairs(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t)
	c.SetToken(g.token(t, "bob"))
	testkit.Must(c.ListGranted(t.Context(), nil))(t)
	require.Equal(t, 1, g.count())

	for _, scope := range []string{"read", "write", "delete"} {
		d := checkedIn(t, c, t.Context(), "orders", scope)
		assert.True(t, d.Cached, scope)
	}
	assert.Equal(t, 1, g.count())

	// Specific pairs come from the cache; wildcards always ask.
	testkit.Must(c.ListGranted(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read"}}}))(t)
	assert.Equal(t, 1, g.count())
	testkit.Must(c.ListGranted(t.Context(), []pep.Resource{{Name: "orders"}}))(t)
	assert.Equal(t, 2, g.count())
}

func TestListGrantedFailures(t *testing.T) {
	t.Parallel()
	// The hook injects what the server cannot do on demand: fail one chunk,
	// answer with a pair missing or in conflict.
	t.Run("failed chunk: error with the confirmed grants", func(t *testing.T) {
		t.Parallel()
		g := startReference(t)
		g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
			body, _ := readBodyString(r)
			if strings.Contains(body, `"invoices"`) {
				writeError(w, http.StatusServiceUnavailable, "down")
				return true
			}
			return false
		})
		c := g.newClient(t, pep.WithBatchSize(1), noRetry)
		c.SetToken(g.token(t, "alice"))
		got, err := c.ListGranted(t.Context(), []pep.Resource{
			{Name: "orders", Scopes: []string{"read"}}, {Name: "invoices", Scopes: []string{"read"}},
		})
		require.ErrorIs(t, err, pep.ErrUnavailable)
		assert.Equal(t, perms("orders", "read"), got)
	})
	t.Run("missing pair is an error", func(t *testing.T) {
		t.Parallel()
		g := startReference(t)
		g.setHook(bodyHook(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`))
		c := g.newClient(t)
		c.SetToken(g.token(t, "alice"))
		got, err := c.ListGranted(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
		require.ErrorIs(t, err, pep.ErrMalformedResponse)
		assert.Equal(t, perms("orders", "read"), got)
	})
	t.Run("conflicting wildcard pair is not listed", func(t *testing.T) {
		t.Parallel()
		g := startReference(t)
		g.setHook(bodyHook(`{"status":"GRANT","permissions":[` +
			`{"resource":"orders","scope":"read","status":"GRANT"},` +
			`{"resource":"orders","scope":"write","status":"GRANT"},` +
			`{"resource":"orders","scope":"write","status":"DENY"}]}`))
		c := g.newClient(t)
		c.SetToken(g.token(t, "alice"))
		got, err := c.ListGranted(t.Context(), []pep.Resource{{Name: "orders"}})
		require.ErrorIs(t, err, pep.ErrMalformedResponse)
		assert.Equal(t, perms("orders", "read"), got)
		assert.Equal(t, 1, c.Stats().CacheEntries, "only the clean pair is cached")
	})
	t.Run("empty resource name", func(t *testing.T) {
		t.Parallel()
		g, c := startWithAlice(t)
		_, err := c.ListGranted(t.Context(), []pep.Resource{{Scopes: []string{"read"}}})
		require.EqualError(t, err, "pep: invalid argument: resource 0 has no name")
		require.ErrorIs(t, err, pep.ErrInvalidArgument)
		assert.Equal(t, 0, g.count())
	})
}

// TestListGrantedListsAPairOnlyWhenEveryAnswerGrants (a-client13 F1): a
// call whose queries overlap (a named pair and a wildcard that covers it,
// or two wildcards) gets a decision for the pair from each answer, and
// the answers may disagree: the pair was revoked between them. Any DENY,
// ERROR or failure for the pair beats a GRANT for it, whichever answer is
// the newer: the pair is not listed. A failure also returns its error (the
// list is incomplete); a DENY or an ERROR does not (the gateway decided).
// alice reads orders and invoices; the hook gives one request's answer
// after the revocation, the server the other's, in separate requests
// (batch size 1), in whichever order they come.
func TestListGrantedListsAPairOnlyWhenEveryAnswerGrants(t *testing.T) {
	t.Parallel()
	ordersReadDenied := `{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"DENY"}]}`
	tests := []struct {
		name      string
		resources []pep.Resource
		// the hook answers the request whose body holds match with body,
		// or with status when body is empty.
		match, body string
		status      int
		want        []pep.Permission
		wantErr     error
	}{
		{
			name:      "the named pair denied, the wildcard grants",
			resources: []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "orders"}},
			match:     `"scopes":["read"]`, body: ordersReadDenied,
		},
		{
			name:      "the wildcard denies, the named pair granted",
			resources: []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "orders"}},
			match:     `"scopes":[]`, body: ordersReadDenied,
		},
		{
			name:      "the named pair not evaluated (ERROR), the wildcard grants",
			resources: []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "orders"}},
			match:     `"scopes":["read"]`,
			body:      `{"status":"ERROR","permissions":[{"resource":"orders","scope":"read","status":"ERROR"}]}`,
		},
		{
			name:      "the named pair's request fails, the wildcard grants",
			resources: []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "orders"}},
			match:     `"scopes":["read"]`, status: http.StatusServiceUnavailable,
			wantErr: pep.ErrUnavailable,
		},
		{
			name:      "two wildcards disagree about one pair, not about another",
			resources: []pep.Resource{{Name: "*", Scopes: []string{"read"}}, {Name: "orders"}},
			match:     `"name":"*"`,
			body: `{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"DENY"},` +
				`{"resource":"invoices","scope":"read","status":"GRANT"}]}`,
			want: perms("invoices", "read"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				if body, _ := readBodyString(r); !strings.Contains(body, tt.match) {
					return false // the reference server answers
				}
				if tt.body == "" {
					writeError(w, tt.status, "injected")
					return true
				}
				return bodyHook(tt.body)(w, r, 0)
			})
			c := g.newClient(t, pep.WithBatchSize(1), pep.WithCache(0, 0, 0), noRetry)
			c.SetToken(g.token(t, "alice"))
			got, err := c.ListGranted(t.Context(), tt.resources)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, got)
			// Without a cache each query is sent once; a GRANT read before
			// the call's last wait is then asked again, once: nothing in
			// the cache never means nothing newer happened (a-fix15b F2).
			posts := g.posts()
			require.GreaterOrEqual(t, len(posts), 2)
			assert.NotEqual(t, posts[0].pairs(), posts[1].pairs(), "one request per query first")
			assert.LessOrEqual(t, len(posts), 4, "a GRANT asked again once at most")
		})
	}
}

// TestListGrantedReadsItsHitsAgainAfterTheWait (a-client13 F1, F2): a
// named pair's cache hit is read before the call's wildcard request, whose
// sending drops the token's cached decisions, and whose answer is newer
// than the hit. The hit counts for no more than that answer: read again
// once the requests are done, it is what the wildcard's answer left in
// the cache, or asked again. carol's GRANT of orders/read, cached, is
// revoked before the call; the call lists nothing, and a Check after it
// is denied.
func TestListGrantedReadsItsHitsAgainAfterTheWait(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t, noRetry)
	c.SetToken(g.token(t, "carol"))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
	g.unassign(t, "carol")

	got := testkit.Must(c.ListGranted(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "orders"}}))(t)
	assert.Empty(t, got, "orders/read listed from the GRANT cached before the revocation")
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Deny)
}

// TestListGrantedAsksNamedPairsOnceBesideAWildcard (a-fix15b F3): alice
// lists four named pairs
// and every scope of r04 (a wildcard) in one ListGranted, one pair a chunk
// (WithBatchSize(1)). Nothing happens meanwhile: no purge, no revocation,
// no clock movement. The wildcard's own request drops alice's cached
// decisions when it is sent (SendWide: a purge, which also bumps the
// client-wide purge count), so the named pairs' GRANTs, answered and
// cached moments before or fenced while in flight, are gone, and their
// Stamps see the count moved: the call asks the gateway about every one of
// them again: each named pair cost two requests. The wildcards of a call
// of several requests are now asked first, and its named pairs after
// their purge (askWideFirst): each pair is asked once.
func TestListGrantedAsksNamedPairsOnceBesideAWildcard(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	clk := newManualClock()
	c := g.newClientOf(t, bulkClient, pep.WithClock(clk.Now), pep.WithTimeout(time.Minute), noRetry, pep.WithBatchSize(1))
	alice := g.token(t, "alice")
	// Four concrete pairs take the four chunk slots (MaxParallelChunks): the
	// wildcard's chunk starts only once one of them has ended, its answer
	// cached.
	resources := []pep.Resource{
		{Name: "r00", Scopes: []string{"s0"}}, {Name: "r01", Scopes: []string{"s0"}},
		{Name: "r02", Scopes: []string{"s0"}}, {Name: "r03", Scopes: []string{"s0"}},
		{Name: "r04"},
	}
	before := len(g.posts())
	got, err := c.ListGranted(pep.WithToken(t.Context(), alice), resources)
	require.NoError(t, err)
	assert.Len(t, got, 4+5)
	asked := map[string]int{}
	for _, s := range g.posts()[before:] {
		for _, p := range s.pairs() {
			asked[p]++
		}
	}
	t.Logf("asked: %v", asked)
	assert.Equal(t, map[string]int{"r00/s0": 1, "r01/s0": 1, "r02/s0": 1, "r03/s0": 1, "r04/*": 1}, asked,
		"pairs asked again though nothing happened but the call's own wildcard")
}
