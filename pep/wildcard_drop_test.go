package pep_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAnotherCallsWildcardFailsNoGrantClosed: a service's client (its own
// token, bob, who reads and writes orders) serves requests at once. One
// calls CheckMany(orders: read, write), a call of two requests
// (WithBatchSize(1)); other handlers call ListGranted with a wildcard
// while the gateway holds orders/write, the first time and when it is
// asked again. A wildcard drops only the pairs it covers under its own
// request context, so CheckMany's answers stay cached and both GRANTs are
// returned: another caller's activity, nothing revoked or expired, fails
// nothing closed.
func TestAnotherCallsWildcardFailsNoGrantClosed(t *testing.T) {
	t.Parallel()
	rc := pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: "/orders/7"})
	for _, tt := range []struct {
		name    string
		listed  []pep.Resource   // what the other handlers list
		times   int              // how often, each time the gateway holds orders/write
		callOpt []pep.CallOption // CheckMany's
	}{
		// a-hold16 F1: the wildcard dropped every cached decision of the
		// token and fenced the answers in flight.
		{"a wildcard of another resource", []pep.Resource{{Name: "invoices"}}, 1, nil},
		// a-fix16b F1: it fenced other request contexts' answers, which
		// its own answer never stores again.
		{"a wildcard of the same resource under another request context", []pep.Resource{{Name: "orders"}}, 1, []pep.CallOption{rc}},
		// a-fix16b F2: past 64 drops, the cache fenced every key.
		{"the same wildcard asked 70 times", []pep.Resource{{Name: "invoices"}}, 70, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t, pep.WithCache(100, time.Minute, 10*time.Second), pep.WithBatchSize(1), noRetry)
			c.SetToken(g.token(t, "bob"))

			var writes atomic.Int32
			var listErr atomic.Value
			g.setHook(func(_ http.ResponseWriter, r *http.Request, _ int) bool {
				body, _ := readBodyString(r)
				if strings.Contains(body, `"invoices"`) || !strings.Contains(body, `"write"`) {
					return false
				}
				if writes.Add(1) <= 2 {
					for range tt.times {
						if _, err := c.ListGranted(context.Background(), tt.listed); err != nil {
							listErr.Store(err)
						}
					}
				}
				return false // the reference server answers
			})

			r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}, tt.callOpt...)
			require.NoError(t, err)
			require.Nil(t, listErr.Load())
			require.Len(t, r.Decisions, 2)
			for _, d := range r.Decisions {
				assert.Nil(t, d.Cause, "%s/%s: a valid GRANT failed closed by another caller's ListGranted", d.Resource, d.Scope)
				assert.Equal(t, pep.Grant, d.Status, "%s/%s", d.Resource, d.Scope)
			}
			assert.Equal(t, pep.Grant, r.Status)
			assert.Zero(t, c.Stats().FailClosed)
		})
	}
}

// TestAWildcardKeepsTheCallsOwnHits: ListGranted of a cached named pair
// (orders/read, a hit) and a wildcard of another resource (invoices, every
// scope) asks the gateway about the wildcard alone, call after call: the
// wildcard drops only what it covers, never the call's own hit (a-hold16
// F2: it dropped the whole token, so every such call asked its hits again,
// and a gateway blip on that needless request failed a GRANT the cache
// held; the class of a-fix15b F3).
func TestAWildcardKeepsTheCallsOwnHits(t *testing.T) {
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(100, time.Minute, 10*time.Second), noRetry)
	c.SetToken(g.token(t, "bob"))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant) // cached

	for round := range 2 {
		before := len(g.posts())
		got, err := c.ListGranted(t.Context(), []pep.Resource{
			{Name: "orders", Scopes: []string{"read"}},
			{Name: "invoices"},
		})
		require.NoError(t, err)
		require.NotEmpty(t, got)
		var asked []string
		for _, s := range g.posts()[before:] {
			asked = append(asked, s.pairs()...)
		}
		assert.Equal(t, []string{"invoices/*"}, asked, "round %d: only the wildcard is not cached; the hit was asked again", round)
	}
}
