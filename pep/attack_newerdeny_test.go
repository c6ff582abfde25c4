package pep_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackAnswerGrantOutlivesANewerDenial (a-client15 F3): NoCache
// promises that "a later call never gets an older verdict than the one
// this call got", and a call's hits read before its wait are read again
// from the cache, which then holds the newer verdict. A GRANT the call
// asked for is not: Holds checks only the purge count and the TTL. carol's
// CheckMany of orders/read and orders/write (two chunks) reads orders/read
// GRANT; while orders/write is asked, carol loses her department and a
// Check of orders/read with NoCache gets the gateway's DENY, which the
// cache now holds. The CheckMany, which returns after that Check, still
// says GRANT for orders/read.
func TestAttackAnswerGrantOutlivesANewerDenial(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t, pep.WithBatchSize(1), noRetry)
	carol := g.token(t, "carol")
	ctx := pep.WithToken(t.Context(), carol)
	readAnswered := make(chan struct{})
	var readOnce, waitOnce sync.Once
	var newer pep.Decision
	var newerErr error
	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		body, _ := readBodyString(r)
		if strings.Contains(body, `"write"`) {
			<-readAnswered
			waitOnce.Do(func() {
				g.unassign(t, "carol")
				newer, newerErr = c.Check(ctx, "orders", "read", pep.NoCache())
			})
			return false
		}
		r.Body = io.NopCloser(strings.NewReader(body))
		g.srv.ServeHTTP(w, r)
		readOnce.Do(func() { close(readAnswered) })
		return true
	})
	r := testkit.Must(c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}))(t)
	require.NoError(t, newerErr)
	require.Equal(t, pep.Deny, newer.Status, "the NoCache Check during the wait: the gateway's newer DENY")
	later, err := c.Check(ctx, "orders", "read")
	require.NoError(t, err)
	require.Equal(t, pep.Deny, later.Status, "the cache holds the newer DENY")
	require.Len(t, r.Decisions, 2)
	assert.Equal(t, pep.Deny, r.Decisions[1].Status)
	assert.NotEqual(t, pep.Grant, r.Decisions[0].Status,
		"orders/read: the CheckMany returned after the client had the gateway's newer DENY, and still granted")
}
