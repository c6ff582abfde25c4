package authzen_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/invalidationtest"
)

// TestInvalidatorAcrossPEPs: authzen clients share purges as pep's do: a
// Purge on one drops the token's cached decisions on the other, PurgeAll
// drops everything, and nothing cached is served before a heartbeat.
func TestInvalidatorAcrossPEPs(t *testing.T) {
	t.Parallel()
	ch := invalidationtest.NewLong()
	srv, a := startTodo(t, authzen.WithInvalidator(ch))
	b := mustAuthZEN(t, srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()), authzen.WithInvalidator(ch))
	tok := srv.Token("todo", "service-account-todo-api")
	b.SetToken(tok)
	<-ch.Joined
	<-ch.Joined

	cached := func(c *authzen.Client) bool {
		d := evaluated(t, c, todoRead)
		require.True(t, d.Allowed())
		return d.Cached
	}
	for _, c := range []*authzen.Client{a, b} {
		cached(c)
		require.False(t, cached(c), "served from the cache before any heartbeat")
	}
	ch.Beat(time.Now())
	for _, c := range []*authzen.Client{a, b} {
		cached(c)
		require.True(t, cached(c))
	}
	require.NoError(t, a.Purge(t.Context(), tok))
	require.False(t, cached(b), "b served the decision a purged")
	require.True(t, cached(b))
	require.NoError(t, b.PurgeAll(t.Context()))
	require.False(t, cached(a), "a served a decision after b's PurgeAll")

	ch.Beat(time.Now().Add(-time.Minute)) // older than the last: nothing changes
	require.True(t, cached(a))
	require.False(t, a.Stats().CacheBypassed)
}
