package pep_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

func TestCheckDecisions(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	tests := []struct {
		name            string
		user            string
		resource, scope string
		want            pep.Status
	}{
		{"granted", "alice", "orders", "read", pep.Grant},
		{"denied", "alice", "orders", "write", pep.Deny},
		{"other token granted", "bob", "orders", "write", pep.Grant},
		{"undefined scope is an error answer", "alice", "orders", "fly", pep.Error},
		{"undefined resource is an error answer", "alice", "rockets", "read", pep.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := g.newClient(t)
			c.SetToken(g.token(t, tt.user))
			d := checkedIn(t, c, t.Context(), tt.resource, tt.scope)
			assert.Equal(t, tt.resource, d.Resource)
			assert.Equal(t, tt.scope, d.Scope)
			assert.False(t, d.Cached)
			requireGatewayDecision(t, d, tt.want)
		})
	}
}

// TestRequestOnTheWire: what a Check sends; a request context is sent as
// it was when the option was made (its headers map is copied).
func TestRequestOnTheWire(t *testing.T) {
	t.Parallel()
	headers := map[string]string{"X-Tenant": "eu"}
	withContext := pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: "/orders/7", Headers: headers, Body: "{}"})
	headers["X-Tenant"] = "changed after the option was made"
	tests := []struct {
		name        string
		opts        []pep.CallOption
		wantContext map[string]any
	}{
		{
			name:        "no request context sends an empty object",
			wantContext: map[string]any{},
		},
		{
			name: "request context sent as attributes",
			opts: []pep.CallOption{withContext},
			// The spec's attributes are strings: headers travel as their JSON text.
			wantContext: map[string]any{"attributes": map[string]any{
				"method": "GET", "path": "/orders/7", "headers": `{"X-Tenant":"eu"}`, "body": "{}",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t)
			alice := g.token(t, "alice")
			c.SetToken(alice)
			d := checked(t, c, "orders", "read", tt.opts...)
			requireGatewayDecision(t, d, pep.Grant) // the server took the request as it is meant

			r := g.last(t)
			assert.Equal(t, "POST", r.Method)
			assert.Equal(t, "/realms/acme/authorization-decision-provider/authorize", r.Path)
			assert.Equal(t, "application/json", r.ContentType)
			assert.Equal(t, "Bearer "+alice, r.Authorization)
			assert.Equal(t, testClient, r.Body.ClientID)
			assert.Equal(t, []string{"orders/read"}, r.pairs())
			assert.Equal(t, tt.wantContext, r.Body.Context)
		})
	}
}

func TestGatewayURLWithPathPrefix(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	// The server serves at the root; a prefix must show up in the path.
	c := mustPep(t, g.URL+"/gw/", testRealm, testClient, pep.WithHTTPClient(g.Client()), noRetry)
	c.SetToken(g.token(t, "alice"))
	d := checked(t, c, "orders", "read")
	assert.False(t, d.Allowed(), "the server has no /gw prefix, so this is a 404")
	var re *pep.ResponseError
	require.ErrorAs(t, d.Cause, &re)
	assert.Equal(t, http.StatusNotFound, re.StatusCode)
	assert.Equal(t, "/gw/realms/acme/authorization-decision-provider/authorize", g.last(t).Path)
}

func TestCheckInputErrors(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	tests := []struct {
		name            string
		resource, scope string
		wantErr         string
	}{
		{"empty resource", "", "read", "pep: invalid argument: a check needs a resource and a scope"},
		{"empty scope", "orders", "", "pep: invalid argument: a check needs a resource and a scope"},
		{"wildcard resource", "*", "read", `pep: invalid argument: the resource "*" stands for every resource; only ListGranted may ask for it`},
		{"wildcard resource, unknown scope", "*", "no-such-scope", `pep: invalid argument: the resource "*" stands for every resource; only ListGranted may ask for it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := g.newClient(t)
			c.SetToken(g.token(t, "alice"))
			d, err := c.Check(t.Context(), tt.resource, tt.scope)
			require.EqualError(t, err, tt.wantErr)
			require.ErrorIs(t, err, pep.ErrInvalidArgument)
			require.ErrorIs(t, d.Cause, pep.ErrInvalidArgument)
			assert.False(t, d.Allowed())
			assert.Equal(t, pep.Deny, d.Status)
			assert.Equal(t, tt.resource, d.Resource, "a decision is never renamed")
			assert.Equal(t, 0, g.count(), "a caller mistake sends nothing")
		})
	}
}

// TestCacheTTLs: a GRANT is kept for grantTTL and a DENY for denyTTL,
// counted from when the client asked, not from when the answer came: an
// answer that was long in coming (a slow gateway, or a client process
// stalled before it stored the answer) must not be served past its TTL
// after the question.
func TestCacheTTLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		scope     string        // alice may read orders, not write them
		inFlight  time.Duration // how long the first request takes, by the client's clock
		then      time.Duration // from its answer to the second call
		wantFetch bool          // the second call reaches the gateway
	}{
		{"grant within grantTTL", "read", 0, 29 * time.Second, false},
		{"grant after grantTTL", "read", 0, 30 * time.Second, true},
		{"deny within denyTTL", "write", 0, 9 * time.Second, false},
		{"deny after denyTTL", "write", 0, 10 * time.Second, true},
		{"read back within grantTTL of the request", "read", 20 * time.Second, 9 * time.Second, false},
		{"read back at grantTTL after the request", "read", 20 * time.Second, 10 * time.Second, true},
		{"answered after grantTTL", "read", 31 * time.Second, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newManualClock()
			g := startReference(t)
			g.setHook(func(_ http.ResponseWriter, _ *http.Request, n int) bool {
				if n == 1 {
					clk.Advance(tt.inFlight) // the request is at the gateway
				}
				return false // the reference server answers
			})
			c := g.newClient(t, pep.WithClock(clk.Now), pep.WithCache(100, 30*time.Second, 10*time.Second))
			c.SetToken(g.token(t, "alice"))
			want := map[string]pep.Status{"read": pep.Grant, "write": pep.Deny}[tt.scope]
			d := checkedIn(t, c, t.Context(), "orders", tt.scope)
			requireGatewayDecision(t, d, want)
			clk.Advance(tt.then)
			d = checkedIn(t, c, t.Context(), "orders", tt.scope)
			requireGatewayDecision(t, d, want)
			assert.Equal(t, !tt.wantFetch, d.Cached)
			assert.Equal(t, map[bool]int{false: 1, true: 2}[tt.wantFetch], g.count())
		})
	}
}

// TestCacheKeepsOnlyGatewayGrantAndDeny: the gateway's GRANT and DENY
// answer the calls after the first from the cache, without a request; an
// ERROR answer, and any answer of a client without a cache, is asked for
// each time. Stats counts each.
func TestCacheKeepsOnlyGatewayGrantAndDeny(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		scope      string
		opts       []pep.Option
		wantStatus pep.Status
		want       pep.Stats // after three calls
	}{
		{"GRANT is cached", "read", nil, pep.Grant,
			pep.Stats{Calls: 3, GatewayRequests: 1, CacheHits: 2, CacheMisses: 1, CacheEntries: 1}},
		{"DENY is cached", "write", nil, pep.Deny,
			pep.Stats{Calls: 3, GatewayRequests: 1, CacheHits: 2, CacheMisses: 1, CacheEntries: 1}},
		{"ERROR is never cached", "fly", nil, pep.Error,
			pep.Stats{Calls: 3, GatewayRequests: 3, CacheMisses: 3}},
		{"a disabled cache keeps nothing", "read", []pep.Option{pep.WithCache(0, 0, 0)}, pep.Grant,
			pep.Stats{Calls: 3, GatewayRequests: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t, tt.opts...)
			c.SetToken(g.token(t, "alice"))
			for i := range 3 {
				d := checkedIn(t, c, t.Context(), "orders", tt.scope)
				requireGatewayDecision(t, d, tt.wantStatus)
				assert.Equal(t, i > 0 && tt.want.CacheHits > 0, d.Cached, "call %d", i)
			}
			assert.Equal(t, int(tt.want.GatewayRequests), g.count())
			s := c.Stats()
			s.CacheBytes = 0
			assert.Equal(t, tt.want, s)
		})
	}
}

// lastByteChanged returns tok with its last character replaced by another
// base64url character whose top bit differs. That bit is always data, never
// padding, so the decoded signature changes: the server refuses the result.
func lastByteChanged(tok string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, tok[len(tok)-1])
	return tok[:len(tok)-1] + string(alphabet[i^32])
}

func TestTwoTokensNeverShareCacheEntries(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	alice, bob := g.token(t, "alice"), g.token(t, "bob")
	// A string that differs from alice's token only in its last byte, same
	// length: whatever a hash of them does, they are different callers.
	similar := lastByteChanged(alice)
	c := g.newClient(t)

	tests := []struct {
		name, token, resource, scope string
		want                         pep.Status
		wantErr                      error
		wantCached                   bool
	}{
		{name: "alice writes orders", token: alice, resource: "orders", scope: "write", want: pep.Deny},
		{name: "bob writes orders", token: bob, resource: "orders", scope: "write", want: pep.Grant},
		{name: "alice reads orders", token: alice, resource: "orders", scope: "read", want: pep.Grant},
		{name: "bob reads orders", token: bob, resource: "orders", scope: "read", want: pep.Grant},
		{name: "alice's token with its last byte changed is refused", token: similar, resource: "orders", scope: "read",
			want: pep.Deny, wantErr: pep.ErrUnauthorized},
		// The other string has alice's header and payload: a forgery of
		// her token, whose refusal retires her token's identity. Her
		// entry goes, and she is asked for again, never served another's.
		{name: "alice is asked again once a forgery of her token was refused", token: alice, resource: "orders", scope: "read",
			want: pep.Grant},
		{name: "bob's entry too", token: bob, resource: "orders", scope: "write", want: pep.Grant, wantCached: true},
	}
	for _, tt := range tests { // sequential: each builds on the cache so far
		before := g.count()
		d, err := c.Check(pep.WithToken(t.Context(), tt.token), tt.resource, tt.scope)
		if tt.wantErr != nil {
			require.ErrorIs(t, err, tt.wantErr, tt.name)
			assert.Equal(t, tt.want, d.Status, tt.name)
			assert.False(t, d.Allowed(), tt.name)
		} else {
			require.NoError(t, err, tt.name)
			requireGatewayDecision(t, d, tt.want)
		}
		assert.Equal(t, tt.wantCached, d.Cached, "%s: another token's entry must not answer", tt.name)
		if tt.wantCached {
			assert.Equal(t, before, g.count(), tt.name)
			continue
		}
		assert.Equal(t, before+1, g.count(), tt.name)
		assert.Equal(t, "Bearer "+tt.token, g.last(t).Authorization, tt.name)
	}
}

func TestNoCacheBypassesReadButStores(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t)
	c.SetToken(g.token(t, "carol"))

	d := checked(t, c, "orders", "read")
	require.True(t, d.Allowed(), "carol reads orders through Acme Labs")

	// The gateway changes its mind; NoCache sees it, and stores it.
	g.unassign(t, "carol")
	d = checked(t, c, "orders", "read", pep.NoCache())
	requireGatewayDecision(t, d, pep.Deny)
	assert.False(t, d.Cached)

	d = checked(t, c, "orders", "read")
	assert.True(t, d.Cached)
	requireGatewayDecision(t, d, pep.Deny)
	assert.Equal(t, 2, g.count())
}

// TestEveryAnswerReplacesTheCachedVerdict: whatever the gateway answers
// for a pair replaces what the cache held for it. An answer the cache does
// not keep (an ERROR, a pair listed twice or not at all, a pair a wildcard
// no longer lists) removes the older GRANT: the next Check asks the
// gateway instead of serving a verdict older than the one the client has
// had since. The reference server cannot drop a scope from a client on
// demand, so a hook gives its answers after the change.
func TestEveryAnswerReplacesTheCachedVerdict(t *testing.T) {
	t.Parallel()
	perm := func(resource, scope, status string) map[string]string {
		return map[string]string{"resource": resource, "scope": scope, "status": status}
	}
	tests := []struct {
		name string
		// perms is what the gateway lists after the change.
		perms []map[string]string
		// call asks the gateway after the change; it is not served by the
		// cache.
		call func(ctx context.Context, c *pep.Client) error
	}{
		{"ERROR for the pair (NoCache)", []map[string]string{perm("orders", "read", "ERROR")},
			func(ctx context.Context, c *pep.Client) error {
				d, err := c.Check(ctx, "orders", "read", pep.NoCache())
				assert.Equal(t, pep.Error, d.Status)
				return err
			}},
		{"the pair listed twice (NoCache)", []map[string]string{perm("orders", "read", "GRANT"), perm("orders", "read", "GRANT")},
			func(ctx context.Context, c *pep.Client) error {
				d, err := c.Check(ctx, "orders", "read", pep.NoCache())
				assert.False(t, d.Allowed())
				return err
			}},
		{"the pair not listed (NoCache)", []map[string]string{},
			func(ctx context.Context, c *pep.Client) error {
				d, err := c.Check(ctx, "orders", "read", pep.NoCache())
				assert.False(t, d.Allowed())
				return err
			}},
		{"ERROR for the pair in a CheckMany", []map[string]string{perm("orders", "read", "ERROR"), perm("invoices", "pay", "DENY")},
			func(ctx context.Context, c *pep.Client) error {
				res, err := c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"read"}}, {Name: "invoices", Scopes: []string{"pay"}}}, pep.NoCache())
				assert.False(t, res.Allowed())
				return err
			}},
		{"a wildcard no longer lists the scope", []map[string]string{perm("orders", "write", "DENY"), perm("orders", "delete", "DENY")},
			func(ctx context.Context, c *pep.Client) error {
				perms, err := c.ListGranted(ctx, []pep.Resource{{Name: "orders"}})
				assert.Empty(t, perms)
				return err
			}},
		{"every resource no longer lists the scope", []map[string]string{perm("invoices", "read", "GRANT")},
			func(ctx context.Context, c *pep.Client) error {
				perms, err := c.ListGranted(ctx, nil)
				assert.Equal(t, []pep.Permission{{Resource: "invoices", Scope: "read", Status: pep.Grant}}, perms)
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, c := startWithAlice(t)
			d := checked(t, c, "orders", "read")
			requireGatewayDecision(t, d, pep.Grant) // cached

			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				writeJSON(w, http.StatusOK, map[string]any{"status": "DENY", "permissions": tt.perms})
				return true
			})
			require.NoError(t, tt.call(t.Context(), c))
			g.setHook(nil)

			asked := g.count()
			d = checked(t, c, "orders", "read")
			assert.False(t, d.Cached, "the older GRANT is served in place of the gateway's newer answer")
			assert.Equal(t, asked+1, g.count(), "the Check asks the gateway")
			requireGatewayDecision(t, d, pep.Grant) // the reference server's answer
		})
	}
}

// TestAnOlderAnswerNeverReplacesANewerOne: the cache keeps the answer to
// the latest request sent, whatever order the answers arrive in. A
// CheckMany that the gateway decided GRANT before a revocation, and whose
// answer is slow to arrive, does not overwrite the DENY that a later Check
// of one of its pairs stored: the Checks after it are served that DENY
// (the client's token); nor does it come back once other tokens'
// decisions evicted that DENY (a per-call token, in a cache of two).
func TestAnOlderAnswerNeverReplacesANewerOne(t *testing.T) {
	t.Parallel()
	for _, evicted := range []bool{false, true} {
		name := map[bool]string{false: "the newer DENY stays cached", true: "TestAnOlderAnswerStaysOutAfterTheNewerOneWasEvicted"}[evicted]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t, pep.WithCache(2, 30*time.Second, 10*time.Second))
			alice := t.Context()
			if evicted {
				alice = pep.WithToken(alice, g.token(t, "alice"))
			} else {
				c.SetToken(g.token(t, "alice"))
			}
			arrived, release := make(chan struct{}), make(chan struct{})
			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				data, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(data)) // for answerAll
				var body sentBody
				_ = json.Unmarshal(data, &body)
				if len(sentRequest{Body: body}.pairs()) == 2 {
					// The CheckMany, decided before the revocation and
					// answered last.
					close(arrived)
					select {
					case <-release:
					case <-g.closing:
					}
					answerAll(w, r, "GRANT")
					return true
				}
				answerAll(w, r, "DENY") // the gateway's answer after the revocation
				return true
			})
			many := make(chan error, 1)
			go func() {
				_, err := c.CheckMany(alice, []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
				many <- err
			}()
			<-arrived
			d := checkedIn(t, c, alice, "orders", "read")
			require.False(t, d.Cached)
			require.Equal(t, pep.Deny, d.Status, "the gateway's newer answer")
			if evicted { // other traffic: bob's decisions evict alice's newer DENY
				bob := pep.WithToken(t.Context(), g.token(t, "bob"))
				for _, scope := range []string{"a", "b"} {
					checkedIn(t, c, bob, "invoices", scope)
				}
			}
			close(release)
			require.NoError(t, <-many)

			d = checkedIn(t, c, alice, "orders", "read")
			assert.False(t, d.Cached && d.Status == pep.Grant, "the older GRANT is served after the newer DENY")
			if !evicted {
				assert.True(t, d.Cached, "the newer DENY stays cached")
				assert.Equal(t, pep.Deny, d.Status)
			}
		})
	}
}

// TestWildcardReplacesOnlyItsTokensEntries: a ListGranted with a wildcard
// drops what the cache held for its token under the pairs it covers (the
// cache cannot tell which of them the answer no longer lists; see
// cache's TestDropFencesOnlyTheKeysItCovers) and stores what the answer
// lists; the token's other entries, and other tokens', stay (a-hold16 F1,
// F2: the whole token was dropped, failing other calls' answers closed and
// asking the call's own hits again).
func TestWildcardReplacesOnlyItsTokensEntries(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t)
	alice := pep.WithToken(t.Context(), g.token(t, "alice"))
	bob := pep.WithToken(t.Context(), g.token(t, "bob"))
	for _, ask := range []struct {
		ctx             context.Context
		resource, scope string
	}{{alice, "orders", "write"}, {alice, "invoices", "read"}, {bob, "orders", "write"}} {
		d := checkedIn(t, c, ask.ctx, ask.resource, ask.scope)
		require.False(t, d.Cached)
	}

	perms, err := c.ListGranted(alice, []pep.Resource{{Name: "orders"}})
	require.NoError(t, err)
	require.Equal(t, []pep.Permission{{Resource: "orders", Scope: "read", Status: pep.Grant}}, perms)

	tests := []struct {
		name            string
		ctx             context.Context
		resource, scope string
		want            pep.Status
		cached          bool
	}{
		{"another token's entry stays", bob, "orders", "write", pep.Grant, true},
		{"a pair the wildcard listed is stored", alice, "orders", "read", pep.Grant, true},
		{"a pair the wildcard covers is stored as the answer lists it", alice, "orders", "write", pep.Deny, true},
		{"the token's entries the wildcard does not cover stay", alice, "invoices", "read", pep.Grant, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := checkedIn(t, c, tt.ctx, tt.resource, tt.scope)
			requireGatewayDecision(t, d, tt.want)
			assert.Equal(t, tt.cached, d.Cached)
		})
	}
}

// A cached Check reads only the entry of its own token, pair and request
// context (GET and POST of one path are two), however it reads the cache: the client token's hit without
// options goes straight to the token's entries, and must not answer a
// per-call token, an empty per-call token, a request context or NoCache,
// nor be answered by a per-call token's entry.
func TestCachedCheckReadsOnlyItsOwnEntry(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t)
	c.SetToken(g.token(t, "alice")) // a clerk: reads orders
	ctx := t.Context()
	d := checkedIn(t, c, ctx, "orders", "read")
	requireGatewayDecision(t, d, pep.Grant)
	sent := g.count()

	dave := pep.WithToken(ctx, g.token(t, "dave")) // no role: reads nothing
	d = checkedIn(t, c, dave, "orders", "read")
	requireGatewayDecision(t, d, pep.Deny)
	assert.False(t, d.Cached, "a per-call token is not answered from the client token's entry")
	assert.Equal(t, sent+1, g.count())

	_, err := c.Check(pep.WithToken(ctx, ""), "orders", "read")
	require.ErrorIs(t, err, pep.ErrNoToken, "an empty per-call token does not fall back to the client token's entry")

	for i, method := range []string{"GET", "POST", "GET"} {
		d = checkedIn(t, c, ctx, "orders", "read", pep.WithRequestContext(pep.RequestContext{Method: method, Path: "/orders"}))
		assert.Equal(t, i == 2, d.Cached, "a request context has entries of its own, %s", method)
	}
	d = checkedIn(t, c, ctx, "orders", "read", pep.NoCache())
	assert.False(t, d.Cached, "NoCache asks the gateway")
	assert.Equal(t, sent+4, g.count())

	d = checkedIn(t, c, ctx, "orders", "read")
	assert.True(t, d.Cached)
	assert.True(t, d.Allowed(), "the client token's entry, not dave's")
	d = checkedIn(t, c, dave, "orders", "read")
	assert.True(t, d.Cached)
	assert.False(t, d.Allowed(), "dave's entry, not the client token's")
	assert.Equal(t, sent+4, g.count())
}

func TestCheckHitAllocatesNothing(t *testing.T) {
	g, c := startWithAlice(t)
	ctx := t.Context()
	checkedIn(t, c, ctx, "orders", "read")

	perCall := pep.WithToken(ctx, g.token(t, "bob"))
	checkedIn(t, c, perCall, "orders", "read")

	for name, ctx := range map[string]context.Context{"client token": ctx, "per-call token": perCall} {
		allocs := testing.AllocsPerRun(1000, func() {
			d, err := c.Check(ctx, "orders", "read")
			if err != nil || !d.Cached {
				t.Fatalf("expected a cache hit, got %+v, %v", d, err)
			}
		})
		assert.Zero(t, allocs, name)
	}
}

// Cached Checks by per-call tokens and by the client's own token, racing
// SetToken, ClearToken and 401s that purge one token's entries, never allow
// a token that may not: dave (no role), an expired token, or the client's
// token while it is dave's. Run with -race, it also checks that the hits'
// lock-free paths are ordered with the cache's writers.
func TestCachedChecksRaceTokenChanges(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(64, time.Minute, time.Minute))
	aliceTok, bobTok, daveTok := g.token(t, "alice"), g.token(t, "bob"), g.token(t, "dave")
	expired := g.expiredToken(t, "alice")
	g.setHook(func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n%7 == 0 && r.Header.Get("Authorization") == "Bearer "+bobTok {
			writeError(w, http.StatusUnauthorized, "token revoked")
			return true
		}
		return false
	})
	ctx := t.Context()
	denied := map[string]context.Context{"dave": pep.WithToken(ctx, daveTok), "expired": pep.WithToken(ctx, expired)}
	others := []context.Context{pep.WithToken(ctx, aliceTok), pep.WithToken(ctx, bobTok)}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := range 200 {
				scope := []string{"read", "write"}[(i/4)%2]
				if (w+i)%2 == 0 {
					_, _ = c.Check(others[(w+i)/2%2], "orders", scope)
					continue
				}
				name := []string{"dave", "expired"}[(w+i)/2%2]
				if d, err := c.Check(denied[name], "orders", scope); d.Allowed() {
					t.Errorf("%s may %s orders: cached %v, %v", name, scope, d.Cached, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 150 {
			// A Check of its own each round paces the changes with the
			// workers' calls, so that tokens change while entries exist.
			_, _ = c.Check(others[i%2], "orders", "read")
			switch i % 3 {
			case 0:
				c.SetToken(aliceTok)
			case 1:
				c.SetToken(bobTok)
			case 2:
				c.ClearToken()
			}
			if i%5 == 0 { // only this goroutine sets the client's token
				c.SetToken(daveTok)
				if d, err := c.Check(ctx, "orders", "read"); d.Allowed() {
					t.Errorf("the client's token is dave's, and it may read orders: cached %v, %v", d.Cached, err)
					return
				}
			}
		}
	})
	wg.Wait()
}
