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

// TestAttackManyWildcardsFailCheckManyClosed (a-fix16b F2): the a-hold16
// F1 lock-out again, through cache/order.go's maxDrops fallback. A
// service's client (token bob) serves CheckMany(orders: read, write), a
// call of two requests (WithBatchSize(1)), while other handlers of the
// same service call ListGranted(invoices: every scope) 70 times (a page
// listing invoices' permissions, a poller) while the gateway holds
// orders/write. Each wildcard's Drop is remembered on the oldest open
// writer (CheckMany's orders/write request); past maxDrops (64) the oldest
// drop becomes a fence of every older writer, whatever key: CheckMany's
// answers about orders, which no wildcard covers, are refused, the re-ask
// meets the same, and both valid GRANTs fail closed. A wildcard fences
// exactly the keys it covers, however many there are.
func TestAttackManyWildcardsFailCheckManyClosed(t *testing.T) {
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
			for range 70 {
				if _, err := c.ListGranted(context.Background(), []pep.Resource{{Name: "invoices"}}); err != nil {
					listErr.Store(err)
				}
			}
		}
		return false // the reference server answers
	})

	r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
	require.NoError(t, err)
	require.Nil(t, listErr.Load())
	require.Len(t, r.Decisions, 2)
	for _, d := range r.Decisions {
		if d.Cause != nil {
			t.Logf("%s/%s: %v", d.Resource, d.Scope, d.Cause)
		}
		assert.Nil(t, d.Cause, "%s/%s: a valid GRANT failed closed by other callers' ListGranted about invoices", d.Resource, d.Scope)
		assert.Equal(t, pep.Grant, d.Status, "%s/%s", d.Resource, d.Scope)
	}
	assert.Equal(t, pep.Grant, r.Status)
	assert.Zero(t, c.Stats().FailClosed)
}
