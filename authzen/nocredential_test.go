package authzen_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
)

// sidecar is a PDP that takes no credential (Cerbos, OpenFGA without
// authentication: the reference server always wants one): it grants
// everything and records the Authorization header of every request.
type sidecar struct {
	*httptest.Server
	mu    sync.Mutex
	auths [][]string
}

func startSidecar(t *testing.T) *sidecar {
	t.Helper()
	s := &sidecar{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auths = append(s.auths, r.Header.Values("Authorization"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"decision":true}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sidecar) requests() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.auths...)
}

var readDoc = authzen.Request{
	Subject:  authzen.Subject{Type: "user", ID: "alice"},
	Action:   authzen.Action{Name: "can_read"},
	Resource: authzen.Resource{Type: "document", ID: "42"},
}

// A client made WithoutCredentials asks a PDP that takes none, sending no
// Authorization header, and caches its answers as any credential's.
func TestWithoutCredentialsSendsNone(t *testing.T) {
	t.Parallel()
	pdp := startSidecar(t)
	c, err := authzen.New(pdp.URL, authzen.WithoutCredentials(),
		authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	for range 2 {
		d, err := c.Evaluate(t.Context(), readDoc)
		require.NoError(t, err)
		assert.True(t, d.Allowed(), "cause %v", d.Cause)
	}
	require.Equal(t, [][]string{nil}, pdp.requests(), "one request, without an Authorization header")
	assert.Equal(t, uint64(1), c.Stats().CacheHits)
	c.ClearToken() // nothing to clear: the client still sends none
	_, err = c.Evaluate(t.Context(), readDoc, authzen.NoCache())
	require.NoError(t, err)
}

// Without the option, a client with no token sends nothing: a missing
// credential is never taken for a PDP that needs none, and the error
// names both ways out.
func TestNoCredentialIsNeverTheDefault(t *testing.T) {
	t.Parallel()
	pdp := startSidecar(t)
	c, err := authzen.New(pdp.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	d, err := c.Evaluate(t.Context(), readDoc)
	require.ErrorIs(t, err, authzen.ErrNoToken)
	assert.False(t, d.Allowed())
	assert.Contains(t, err.Error(), "SetToken")
	assert.Contains(t, err.Error(), "WithoutCredentials")
	assert.Empty(t, pdp.requests())
}

// A token given to a client made WithoutCredentials is a wiring mistake:
// every later call fails closed, sends nothing, and says what to fix;
// ClearToken does not undo it. The token is never quoted.
func TestWithoutCredentialsRefusesATokenGivenLater(t *testing.T) {
	t.Parallel()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
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
			c, err := authzen.New(pdp.URL, authzen.WithoutCredentials(),
				authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			_, err = c.Evaluate(t.Context(), readDoc)
			require.NoError(t, err)
			tt.give(c)
			c.ClearToken()
			d, err := c.Evaluate(t.Context(), readDoc)
			require.ErrorIs(t, err, authzen.ErrNoToken)
			assert.False(t, d.Allowed())
			assert.Contains(t, err.Error(), "WithoutCredentials")
			assert.Contains(t, err.Error(), tt.method)
			assert.NotContains(t, err.Error(), "secret-token")
			assert.Len(t, pdp.requests(), 1, "nothing sent after the mistake; not even the cached grant is served")
		})
	}
}

// Against the reference server, which wants the PEP's credential, a
// client without one is refused and fails closed.
func TestWithoutCredentialsAgainstAPDPThatWantsOne(t *testing.T) {
	t.Parallel()
	srv, _ := startTodo(t)
	c, err := authzen.New(srv.URL+"/realms/todo", authzen.WithoutCredentials(), authzen.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	d, err := c.Evaluate(t.Context(), authzen.Request{
		Subject:  authzen.Subject{Type: "identity", ID: "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"},
		Action:   authzen.Action{Name: "can_read_user"},
		Resource: authzen.Resource{Type: "user", ID: "beth@the-smiths.com"},
	})
	require.ErrorIs(t, err, authzen.ErrUnauthorized)
	assert.False(t, d.Allowed())
}
