package authzen_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// startSidecar starts a PDP that takes no credential (Cerbos, OpenFGA
// without authentication: the reference server always wants one): it
// grants everything and records the Authorization header of every request.
func startSidecar(t *testing.T) *gatewaytest.Server {
	t.Helper()
	return gatewaytest.Start(t, answer(http.StatusOK, `{"decision":true}`), gatewaytest.WithAuthorizations())
}

// sidecarClient returns a client of pdp, with its evaluation endpoint
// and opts, closed when the test ends.
func sidecarClient(t *testing.T, pdp *gatewaytest.Server, opts ...authzen.Option) *authzen.Client {
	t.Helper()
	c := mustAuthZEN(t, pdp.URL, append([]authzen.Option{authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"})}, opts...)...)
	return c
}

var readDoc = authzen.Request{
	Subject:  authzen.Subject{Type: "user", ID: "alice"},
	Action:   authzen.Action{Name: "can_read"},
	Resource: authzen.Resource{Type: "document", ID: "42"},
}

// A client made WithoutCredentials asks a PDP that takes none, sending no
// Authorization header, and caches its answers as any credential's.
// ClearToken, SetToken("") and SetDPoPToken("", signer) do nothing to it:
// a token read from an empty setting does not brick it.
func TestWithoutCredentialsSendsNone(t *testing.T) {
	t.Parallel()
	pdp := startSidecar(t)
	c := sidecarClient(t, pdp, authzen.WithoutCredentials())
	for range 2 {
		d := evaluated(t, c, readDoc)
		assert.True(t, d.Allowed(), "cause %v", d.Cause)
	}
	require.Equal(t, [][]string{nil}, pdp.Authorizations(), "one request, without an Authorization header")
	assert.Equal(t, uint64(1), c.Stats().CacheHits)
	for name, clear := range clears(t) { // nothing to clear: the client still sends none
		clear(c)
		d := testkit.Must(c.Evaluate(t.Context(), readDoc, authzen.NoCache()))(t, name)
		assert.True(t, d.Allowed(), name)
	}
}

// clears are the ways to clear a client's token: SetToken("") and
// SetDPoPToken("", signer) are ClearToken() on every client.
func clears(t *testing.T) map[string]func(*authzen.Client) {
	signer := testkit.Must(dpop.GenerateKey())(t)
	return map[string]func(*authzen.Client){
		"TestNoTokenSendsNothing":          (*authzen.Client).ClearToken,
		"SetToken(\"\") is ClearToken":     func(c *authzen.Client) { c.SetToken("") },
		"SetDPoPToken(\"\") is ClearToken": func(c *authzen.Client) { c.SetDPoPToken("", signer) },
	}
}

// Without the option, a client with no token, never given one or cleared
// (TestNoTokenSendsNothing; SetToken("") and SetDPoPToken("", signer)
// too, each emitting tokenCleared), sends nothing: a missing credential is
// never taken for a PDP that needs none, and the error names both ways
// out.
func TestNoCredentialIsNeverTheDefault(t *testing.T) {
	t.Parallel()
	ways := clears(t)
	ways["never given"] = nil
	for name, clear := range ways {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pdp := startSidecar(t)
			c := sidecarClient(t, pdp)
			if clear != nil {
				var kinds []events.Kind
				c.Subscribe(func(e events.Event) { kinds = append(kinds, e.Kind) })
				c.SetToken(pepToken)
				clear(c)
				assert.Equal(t, []events.Kind{events.TokenSet, events.TokenCleared}, kinds)
			}
			d, err := c.Evaluate(t.Context(), readDoc)
			require.ErrorIs(t, err, authzen.ErrNoToken)
			assert.False(t, d.Allowed())
			assert.Contains(t, err.Error(), "SetToken")
			assert.Contains(t, err.Error(), "WithoutCredentials")
			assert.Zero(t, pdp.Requests())
		})
	}
}

// A token given to a client made WithoutCredentials is a wiring mistake:
// every later call fails closed, sends nothing, and says what to fix,
// until ClearToken makes the client send no credential again. The token
// is never quoted.
func TestWithoutCredentialsRefusesATokenGivenLater(t *testing.T) {
	t.Parallel()
	signer := testkit.Must(dpop.GenerateKey())(t)
	tests := []struct {
		name   string
		method string
		give   func(*authzen.Client)
	}{
		{"SetToken", "SetToken", func(c *authzen.Client) { c.SetToken("secret-token") }},
		{"SetDPoPToken", "SetDPoPToken", func(c *authzen.Client) { c.SetDPoPToken("secret-token", signer) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pdp := startSidecar(t)
			c := sidecarClient(t, pdp, authzen.WithoutCredentials())
			evaluated(t, c, readDoc)
			tt.give(c)
			d, err := c.Evaluate(t.Context(), readDoc)
			require.ErrorIs(t, err, authzen.ErrNoToken)
			assert.False(t, d.Allowed())
			assert.Contains(t, err.Error(), "WithoutCredentials")
			assert.Contains(t, err.Error(), tt.method)
			assert.NotContains(t, err.Error(), "secret-token")
			assert.Len(t, pdp.Authorizations(), 1, "nothing sent after the mistake; not even the cached grant is served")

			c.ClearToken() // undoes the mistake: the client sends none again
			d = evaluated(t, c, readDoc)
			assert.True(t, d.Allowed())
			assert.Equal(t, [][]string{nil, nil}, pdp.Authorizations(), "asked again, still without an Authorization header")
		})
	}
}

// Against the reference server, which wants the PEP's credential, a
// client without one is refused and fails closed, with an error that
// says what to fix.
func TestWithoutCredentialsAgainstAPDPThatWantsOne(t *testing.T) {
	t.Parallel()
	srv, _ := startTodo(t)
	c := mustAuthZEN(t, srv.URL+"/realms/todo", authzen.WithoutCredentials(), authzen.WithHTTPClient(srv.Client()))
	d, err := c.Evaluate(t.Context(), authzen.Request{
		Subject:  authzen.Subject{Type: "identity", ID: "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"},
		Action:   authzen.Action{Name: "can_read_user"},
		Resource: authzen.Resource{Type: "user", ID: "beth@the-smiths.com"},
	})
	require.ErrorIs(t, err, authzen.ErrUnauthorized)
	assert.False(t, d.Allowed())
	require.ErrorIs(t, d.Cause, authzen.ErrUnauthorized)
	assert.Contains(t, err.Error(), "no credential", "the error says what to fix")
	assert.Contains(t, err.Error(), "drop WithoutCredentials")
}

// A client made WithoutCredentials has no token to expire: a 401 from its
// PDP (a proxy restarting in front of it) is that call's error and emits
// no token lifecycle event, so the README's refresh handler (SetToken on
// tokenExpired) is never run for it, and the next call is answered.
func TestWithoutCredentialsNeverEmitsTokenExpired(t *testing.T) {
	t.Parallel()
	var blip atomic.Bool
	blip.Store(true)
	pdp := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		if blip.Swap(false) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		answer(http.StatusOK, `{"decision":true}`)(w, r)
	})
	c := sidecarClient(t, pdp, authzen.WithoutCredentials(), authzen.WithRetry(0, time.Millisecond, time.Millisecond))

	var mu sync.Mutex
	var got []events.Kind
	c.Subscribe(func(e events.Event) {
		mu.Lock()
		got = append(got, e.Kind)
		mu.Unlock()
		if e.Kind == events.TokenExpired {
			c.SetToken("refreshed-token") // the README's refresh handler
		}
	})
	// A call that causes an event returns once it is delivered (its
	// context can still be done): no wait is needed to see it.
	d, err := c.Evaluate(t.Context(), readDoc)
	require.ErrorIs(t, err, authzen.ErrUnauthorized)
	assert.False(t, d.Allowed())
	mu.Lock()
	assert.Empty(t, got, "a client without a credential emitted a token lifecycle event")
	mu.Unlock()

	d = testkit.Must(c.Evaluate(t.Context(), readDoc, authzen.NoCache()))(t, "one 401 refused the client for good")
	assert.True(t, d.Allowed())
}
