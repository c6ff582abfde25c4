package authzen_test

// Each option reaches the client, not only its validation: TestNewValidates
// checks the values refused; these check the effect of the values taken.

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestEventHandler: WithEventHandler subscribes from the start; every
// handler sees the lifecycle of the PEP's credential in order.
func TestEventHandler(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got []string
	)
	record := func(name string) events.Handler {
		return func(ev events.Event) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, name+" "+ev.Kind.String()+" "+ev.TokenType)
		}
	}
	c := mustAuthZEN(t, "https://pdp.example.com", authzen.WithEventHandler(record("a")), authzen.WithEventHandler(record("b")))
	c.SetToken("token-1")
	c.SetDPoPToken("token-2", nil)
	c.ClearToken()
	c.ClearToken() // no token: nothing to clear, nothing emitted
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		"a tokenSet Bearer", "b tokenSet Bearer",
		"a tokenSet DPoP", "b tokenSet DPoP",
		"a tokenCleared DPoP", "b tokenCleared DPoP",
	}, got)
}

// TestCacheMaxBytes: WithCacheMaxBytes bounds what the cache holds;
// Stats report its bytes and its evictions of live decisions.
func TestCacheMaxBytes(t *testing.T) {
	t.Parallel()
	second := todoRead
	second.Resource.ID = "todo-2"
	tests := []struct {
		name        string
		opts        []authzen.Option
		wantEntries int
	}{
		{"room for both", nil, 2},
		{"the least bound", []authzen.Option{authzen.WithCacheMaxBytes(core.MinCacheMaxBytes)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, c := startTodo(t, tt.opts...)
			for _, r := range []authzen.Request{todoRead, second} {
				d := evaluated(t, c, r)
				require.True(t, d.Allowed())
			}
			s := c.Stats()
			assert.Equal(t, tt.wantEntries, s.CacheEntries, "an entry larger than the bound is not kept")
			assert.Equal(t, uint64(2), s.CacheMisses)
			if tt.wantEntries > 0 {
				assert.Positive(t, s.CacheBytes)
			}
			assert.Zero(t, s.CacheEvictions)
		})
	}
}

// TestMaxTokenBytes: a token of exactly WithMaxTokenBytes is sent; one
// byte more is refused with ErrNoToken, naming the setting, before
// anything is sent.
func TestMaxTokenBytes(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"), mockserver.WithAccessTokenAlgorithm("ES256"))
	tok := srv.Token("todo", "service-account-todo-api")
	c, err := hangguard.NewAuthZEN(srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()),
		authzen.WithMaxTokenBytes(len(tok)), authzen.WithCache(0, 0, 0))
	require.NoError(t, err)
	c.SetToken(tok)
	d := evaluated(t, c, todoRead)
	require.True(t, d.Allowed())
	sent := c.Stats().PDPRequests

	c.SetToken(tok + "x")
	d, err = c.Evaluate(t.Context(), todoRead)
	require.ErrorIs(t, err, authzen.ErrNoToken)
	assert.Contains(t, err.Error(), "WithMaxTokenBytes")
	assert.False(t, d.Allowed())
	assert.Equal(t, sent, c.Stats().PDPRequests, "nothing was sent")
}
