package pep_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// A slow answer to an older request stays out of the cache after the
// newer answer of its key was evicted by other tokens' decisions, not only
// while it is held.
func TestAnOlderAnswerStaysOutAfterTheNewerOneWasEvicted(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(2, 30*time.Second, 10*time.Second))
	alice := pep.WithToken(t.Context(), g.token(t, "alice"))
	bob := pep.WithToken(t.Context(), g.token(t, "bob"))
	arrived, release := make(chan struct{}), make(chan struct{})
	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		data, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(data)) // for answerAll
		var body sentBody
		_ = json.Unmarshal(data, &body)
		if len(body.Resources) == 1 && len(body.Resources[0].Scopes) == 2 {
			// alice's CheckMany, decided before the revocation and
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
	d, err := c.Check(alice, "orders", "read")
	require.NoError(t, err)
	require.False(t, d.Cached)
	require.Equal(t, pep.Deny, d.Status, "the gateway's newer answer")

	// Other traffic: bob's decisions evict alice's newer DENY.
	for _, scope := range []string{"a", "b"} {
		_, err := c.Check(bob, "invoices", scope)
		require.NoError(t, err)
	}

	close(release)
	require.NoError(t, <-many)

	d, err = c.Check(alice, "orders", "read")
	require.NoError(t, err)
	assert.False(t, d.Cached && d.Status == pep.Grant, "the older GRANT is served after the newer DENY")
}
