package authzen_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/events"
)

// A client made WithoutCredentials has no token to expire, yet a single
// 401 from the PDP (a proxy or sidecar restart in front of it, a mesh
// policy blip) emits tokenExpired for it (TokenType ""). The README's own
// refresh handler (Subscribe: on TokenExpired, SetToken(refresh())) then
// gives the client a token, which on a WithoutCredentials client is the
// refusal "for good": every later call fails with ErrNoToken even once
// the PDP answers again, and ClearToken cannot undo it. One upstream 401
// bricks the PEP until the process restarts (a lock-out of every caller).
func TestAttackNoCredentialTokenExpiredBricksTheClient(t *testing.T) {
	t.Parallel()
	var blip atomic.Bool
	blip.Store(true)
	pdp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if blip.Swap(false) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"decision":true}`))
	}))
	t.Cleanup(pdp.Close)
	c, err := authzen.New(pdp.URL, authzen.WithoutCredentials(), authzen.WithRetry(0, time.Millisecond, time.Millisecond),
		authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	var mu sync.Mutex
	var got []events.Event
	c.Subscribe(func(e events.Event) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
		if e.Kind == events.TokenExpired {
			c.SetToken("refreshed-token") // the README's refresh handler
		}
	})
	_, _ = c.Evaluate(t.Context(), readDoc) // the one 401
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	kinds := make([]events.Kind, 0, len(got))
	for _, e := range got {
		kinds = append(kinds, e.Kind)
	}
	mu.Unlock()
	assert.NotContains(t, kinds, events.TokenExpired, "tokenExpired emitted by a client that has no token")

	d, err := c.Evaluate(t.Context(), readDoc, authzen.NoCache())
	require.NoError(t, err, "after one 401 the client is refused for good")
	assert.True(t, d.Allowed())
}

// SetToken("") is documented as ClearToken(); on a client made
// WithoutCredentials ClearToken does nothing, but SetToken("") refuses the
// client for good. Code that sets a token from configuration
// (SetToken(os.Getenv(...)), empty for a sidecar PDP) bricks it.
func TestAttackNoCredentialSetEmptyTokenIsNotClearToken(t *testing.T) {
	t.Parallel()
	pdp := startSidecar(t)
	c, err := authzen.New(pdp.URL, authzen.WithoutCredentials(),
		authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	c.SetToken("")
	_, err = c.Evaluate(t.Context(), readDoc)
	require.NoError(t, err, "SetToken(\"\") is documented as ClearToken(), which does nothing here")
}
