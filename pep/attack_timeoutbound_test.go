package pep_test

import (
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

// TestAttackTimeoutBound (a-fix15b F4): the Stamp bound is the longer of
// the allow TTL and the timeout, measured from the send: meant for an
// answer that took the whole timeout to come (a single Check's case). It
// also holds an answer that came at once and then waited. carol asks
// CheckMany about orders/read and orders/write in two chunks, with an
// allow TTL of 1 s and a timeout of a minute. orders/read is answered at
// once (GRANT, cached for 1 s); orders/write's request then takes 50 s
// (a slow gateway; the manual clock), during which carol is revoked (no
// purge: a policy change the client learns of only when its TTL ends).
// At the return, orders/read's entry expired 49 s ago; core.Confirm finds
// nothing and holds its Stamp (50 s < max(1 s, 1 min)): the call returns a
// GRANT the gateway decided 50 s before, 50 times its TTL, and withdrew
// meanwhile. A single Check can never return an answer older than its own
// round trip; the TTL bound for a cache hit is 1 s.
func TestAttackTimeoutBound(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	clk := newManualClock()
	c := g.newClient(t, pep.WithClock(clk.Now), pep.WithCache(100, time.Second, 10*time.Second),
		pep.WithTimeout(time.Minute), noRetry, pep.WithBatchSize(1))
	carol := g.token(t, "carol")
	readAnswered := make(chan struct{})
	var readOnce, waitOnce sync.Once
	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		body, _ := readBodyString(r)
		r.Body = io.NopCloser(strings.NewReader(body))
		if !strings.Contains(r.Header.Get("Authorization"), carol) {
			return false
		}
		switch {
		case strings.Contains(body, `"write"`):
			<-readAnswered
			waitOnce.Do(func() {
				g.unassign(t, "carol")
				clk.Advance(50 * time.Second) // orders/write's request is slow
			})
		default:
			g.srv.ServeHTTP(w, r)
			readOnce.Do(func() { close(readAnswered) })
			return true
		}
		return false
	})
	r, err := c.CheckMany(pep.WithToken(t.Context(), carol), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
	require.NoError(t, err)
	require.Len(t, r.Decisions, 2)
	assert.Equal(t, pep.Deny, r.Decisions[0].Status,
		"orders/read: a GRANT decided 50 s before the return, allow TTL 1 s, revoked meanwhile, leaves the client")
}
