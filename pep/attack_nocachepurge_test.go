package pep_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackStrangersRefusalsFailANoCacheCallClosed (a-client15 F4): a
// CheckMany with NoCache stores its answers in the cache like any call,
// but Reconfirm cannot read them back (the call's group is nil), so any
// purge of any token during its wait sends every GRANT it read back to the
// gateway, and one more during that re-ask fails it closed. Any caller can
// make such purges: a request with a made-up token is refused by the
// gateway (401), which purges that token (the client's purge count moves).
// bob's NoCache CheckMany of orders/read and orders/write, in two chunks,
// is denied (ErrUnavailable, WaitedOut) because a stranger sent two
// made-up tokens, one during each of its waits; the gateway granted bob
// every pair each time it was asked.
func TestAttackStrangersRefusalsFailANoCacheCallClosed(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t, pep.WithBatchSize(1), noRetry)
	bob := g.token(t, "bob")
	var strangers atomic.Int32
	stranger := func() {
		n := strangers.Add(1)
		_, err := c.Check(pep.WithToken(context.Background(), "made-up-token-"+strings.Repeat("x", int(n))), "orders", "read")
		if err == nil {
			panic("a made-up token was not refused")
		}
	}
	readAnswered := make(chan struct{})
	var readOnce, firstWait sync.Once
	var bobs atomic.Int32
	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		if r.Header.Get("Authorization") != "Bearer "+bob {
			return false
		}
		body, _ := readBodyString(r)
		r.Body = io.NopCloser(strings.NewReader(body))
		switch n := bobs.Add(1); {
		case strings.Contains(body, `"write"`) && n <= 2:
			<-readAnswered
			firstWait.Do(stranger) // during the call's first wait
		case n > 2:
			stranger() // during the re-ask
		}
		g.srv.ServeHTTP(w, r)
		if strings.Contains(body, `"read"`) {
			readOnce.Do(func() { close(readAnswered) })
		}
		return true
	})
	r, err := c.CheckMany(pep.WithToken(t.Context(), bob), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}, pep.NoCache())
	require.NoError(t, err)
	t.Logf("bob's requests: %d, strangers: %d", bobs.Load(), strangers.Load())
	for _, d := range r.Decisions {
		assert.NoError(t, d.Cause, "%s/%s", d.Resource, d.Scope)
		assert.Equal(t, pep.Grant, d.Status, "%s/%s: granted by the gateway each time it was asked", d.Resource, d.Scope)
	}
}
