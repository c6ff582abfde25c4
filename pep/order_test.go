package pep_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// These tests hold the order of answers: the client never serves, from its
// cache or from a shared request, a verdict older than one it has had
// since. The gateway's answers come from a hook that decides each request
// when it arrives and, where a test needs it, answers it late.

// answerAll is a hook's answer giving every pair asked the one status.
func answerAll(w http.ResponseWriter, r *http.Request, status string) {
	var body sentBody
	_ = json.NewDecoder(r.Body).Decode(&body)
	perms := []map[string]string{}
	for _, p := range (sentRequest{Body: body}).pairs() {
		resource, scope, _ := strings.Cut(p, "/")
		perms = append(perms, map[string]string{"resource": resource, "scope": scope, "status": status})
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "permissions": perms})
}

// panicOnce is a user's RoundTripper with a bug that panics once.
type panicOnce struct {
	base     http.RoundTripper
	panicked atomic.Bool
}

func (p *panicOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.panicked.CompareAndSwap(false, true) {
		panic("a bug in the user's transport")
	}
	return p.base.RoundTrip(r)
}

// A panic under a request (a user's RoundTripper; the middleware and
// grpcpep recover it and go on serving) leaves nothing of the call held by
// the cache.
func TestAPanicUnderARequestLeavesNothingHeld(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	rt := &panicOnce{base: g.Client().Transport}
	c := g.newClient(t, pep.WithHTTPClient(&http.Client{Transport: rt}))
	func() {
		defer func() { _ = recover() }()
		_, _ = c.Check(pep.WithToken(t.Context(), g.token(t, "alice")), "orders", "read")
	}()
	require.True(t, rt.panicked.Load())
	assert.Zero(t, c.Stats().CacheBytes, "the request's cache bookkeeping is still held")
}
