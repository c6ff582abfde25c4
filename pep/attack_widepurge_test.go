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

// TestAttackOthersWildcardListGrantedFailsACheckManyClosed (a-hold16 F1):
// a service's client (its own token, bob, who reads and writes orders)
// serves two requests at once. One calls CheckMany(orders: read, write),
// a call of two requests (WithBatchSize(1)). The other, an unrelated
// handler, calls ListGranted(invoices: every scope): a wildcard, whose
// request (core.SendWide) drops every cached decision of the token.
// Each time it is sent while CheckMany's request about orders/write is at
// the gateway, CheckMany's answers are fenced off the cache, so its
// Confirm finds nothing, asks again, and the re-asked GRANTs (storable:
// a fenced writer "counts as storable") are not served either: both
// valid GRANTs fail closed. Nothing was revoked, nothing expired, and the
// call fits the cache many times over: only another caller's activity
// failed it.
func TestAttackOthersWildcardListGrantedFailsACheckManyClosed(t *testing.T) {
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
		// Another handler of the same service lists bob's invoices
		// scopes while the gateway holds orders/write (the first time,
		// and when it is asked again).
		if writes.Add(1) <= 2 {
			if _, err := c.ListGranted(context.Background(), []pep.Resource{{Name: "invoices"}}); err != nil {
				listErr.Store(err)
			}
		}
		return false // the reference server answers
	})

	r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
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
		assert.Nil(t, d.Cause, "%s/%s: a valid GRANT failed closed by another caller's ListGranted", d.Resource, d.Scope)
		assert.Equal(t, pep.Grant, d.Status, "%s/%s", d.Resource, d.Scope)
	}
	assert.Equal(t, pep.Grant, r.Status)
	assert.Zero(t, c.Stats().FailClosed)
}
