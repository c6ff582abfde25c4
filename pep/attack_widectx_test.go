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

// TestAttackWildcardOtherContextFailsCheckManyClosed (a-fix16b F1): a
// service's client (its own token, bob, who reads and writes orders)
// serves two requests at once. One calls CheckMany(orders: read, write)
// under a request context (GET /orders/7), a call of two requests
// (WithBatchSize(1)). The other, an unrelated handler, calls
// ListGranted(orders: every scope) with no request context, while the
// gateway holds orders/write (the first time and when it is asked again).
// The wildcard's Drop (pep wildcardsCover) covers orders/* "under any
// request context", so it removes and fences CheckMany's answers under
// GET /orders/7, while its own answer is stored only under its own (empty)
// context: nothing newer replaces them. CheckMany's Confirm finds nothing,
// asks again, the re-ask is fenced by the second ListGranted, and both
// valid GRANTs fail closed: another caller's activity, nothing revoked.
// A wildcard fences exactly the keys it covers: pairs under its own
// request context.
func TestAttackWildcardOtherContextFailsCheckManyClosed(t *testing.T) {
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(100, time.Minute, 10*time.Second), pep.WithBatchSize(1), noRetry)
	c.SetToken(g.token(t, "bob"))

	var writes atomic.Int32
	var listErr atomic.Value
	g.setHook(func(_ http.ResponseWriter, r *http.Request, _ int) bool {
		body, _ := readBodyString(r)
		if !strings.Contains(body, `"write"`) || !strings.Contains(body, `/orders/7`) {
			return false
		}
		if writes.Add(1) <= 2 {
			if _, err := c.ListGranted(context.Background(), []pep.Resource{{Name: "orders"}}); err != nil {
				listErr.Store(err)
			}
		}
		return false // the reference server answers
	})

	rc := pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: "/orders/7"})
	r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}, rc)
	require.NoError(t, err)
	require.Nil(t, listErr.Load())
	require.Len(t, r.Decisions, 2)
	for _, s := range g.posts() {
		t.Logf("sent: %v", s.pairs())
	}
	for _, d := range r.Decisions {
		if d.Cause != nil {
			t.Logf("%s/%s: %v", d.Resource, d.Scope, d.Cause)
		}
		assert.Nil(t, d.Cause, "%s/%s: a valid GRANT failed closed by another caller's ListGranted under another request context", d.Resource, d.Scope)
		assert.Equal(t, pep.Grant, d.Status, "%s/%s", d.Resource, d.Scope)
	}
	assert.Equal(t, pep.Grant, r.Status)
	assert.Zero(t, c.Stats().FailClosed)
}
