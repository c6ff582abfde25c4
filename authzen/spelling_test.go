package authzen_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/invalidationtest"
	"github.com/orgauthz/orgauthz/internal/respell"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// replicaPair starts the todo PDP and two clients of it on one in-process
// invalidation channel, trusted from the start: a is the startTodo
// client, b another replica.
func replicaPair(t *testing.T) (srv *mockservertest.Server, a, b *authzen.Client, ch *invalidationtest.Bus) {
	t.Helper()
	ch = invalidationtest.NewLong()
	srv, a = startTodo(t, authzen.WithInvalidator(ch))
	b = mustAuthZEN(t, srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()), authzen.WithInvalidator(ch))
	<-ch.Joined
	<-ch.Joined
	ch.Beat(time.Now())
	return srv, a, b, ch
}

// evaluate evaluates todoRead with c's token and reports whether it was
// allowed and whether it was answered from the cache.
func evaluate(t *testing.T, c *authzen.Client) (allowed, cached bool) {
	t.Helper()
	d, _ := c.Evaluate(t.Context(), todoRead)
	return d.Allowed(), d.Cached
}

// TestEverySpellingOfARetiredTokenIsRetired: as pep's test of the name
// (the core is theirs in common), for authzen's calls. Client a holds
// another spelling of b's token, which the PDP reads as the same token;
// when the token is retired (Purge with its spelling, here or on another
// replica, or another replica's 401 for it), a's cached decisions go: its
// next Evaluate asks the PDP, which refuses the revoked token.
func TestEverySpellingOfARetiredTokenIsRetired(t *testing.T) {
	t.Parallel()
	spellings := []struct {
		name  string
		spell func(tok string) (string, error)
	}{
		{"unused bits of the signature", func(tok string) (string, error) { return respell.UnusedBits(tok, respell.Signature) }},
		{"ECDSA twin", respell.ECDSATwin},
	}
	retirements := []struct {
		name   string
		retire func(t *testing.T, a, b *authzen.Client, tok string)
	}{
		{"Purge", func(t *testing.T, a, _ *authzen.Client, tok string) {
			require.NoError(t, a.Purge(t.Context(), tok))
		}},
		{"another replica's Purge", func(t *testing.T, _, b *authzen.Client, tok string) {
			require.NoError(t, b.Purge(t.Context(), tok))
		}},
		{"another replica's 401", func(t *testing.T, a, b *authzen.Client, _ string) {
			_, err := b.Evaluate(t.Context(), todoRead, authzen.NoCache()) // b's own GRANT is cached
			require.ErrorIs(t, err, authzen.ErrUnauthorized)
			// Published on a goroutine of its own; the message for this
			// version comes first.
			require.Eventually(t, func() bool { return a.Stats().Invalidations > 0 }, 10*time.Second, 2*time.Millisecond)
		}},
	}
	for i, rt := range retirements { // each spelling with at least one retirement
		sp := spellings[i%len(spellings)]
		t.Run(rt.name+"/"+sp.name, func(t *testing.T) {
			t.Parallel()
			srv, a, b, _ := replicaPair(t)
			tok := srv.Token("todo", "service-account-todo-api")
			alt := testkit.Must(sp.spell(tok))(t)
			require.NotEqual(t, tok, alt)
			a.SetToken(alt)
			b.SetToken(tok)
			for _, c := range []*authzen.Client{a, b} {
				allowed, cached := evaluate(t, c)
				require.True(t, allowed, "the PDP grants the spelling")
				require.False(t, cached)
				allowed, cached = evaluate(t, c)
				require.True(t, allowed && cached)
			}

			srv.Revoke(t, "todo", "todo-api", "todo-secret", tok)
			rt.retire(t, a, b, tok)

			d, err := a.Evaluate(t.Context(), todoRead)
			require.False(t, d.Cached, "the retired token's other spelling was served from the cache")
			require.False(t, d.Allowed())
			require.ErrorIs(t, err, authzen.ErrUnauthorized)
		})
	}
}

// TestAForgedSpellingIsRefusedAndOnlyCostsAQuestion: a forged spelling of
// a's token (its header and payload under a signature no key made), sent
// by another replica, is refused (401) and never allowed; its refusal
// retires a's cached decisions, which a then asks the PDP for again and
// is granted.
func TestAForgedSpellingIsRefusedAndOnlyCostsAQuestion(t *testing.T) {
	t.Parallel()
	srv, a, b, _ := replicaPair(t)
	tok := srv.Token("todo", "service-account-todo-api")
	forged := testkit.Must(respell.Forged(tok))(t)
	a.SetToken(tok)
	b.SetToken(forged)
	evaluate(t, a)
	allowed, cached := evaluate(t, a)
	require.True(t, allowed && cached)

	d, err := b.Evaluate(t.Context(), todoRead)
	require.ErrorIs(t, err, authzen.ErrUnauthorized)
	require.False(t, d.Allowed())
	require.Eventually(t, func() bool { return a.Stats().Invalidations > 0 }, 10*time.Second, 2*time.Millisecond)

	allowed, cached = evaluate(t, a)
	require.True(t, allowed, "the real token is valid")
	require.False(t, cached, "the forged spelling's refusal left the real token's decisions cached")
	allowed, cached = evaluate(t, a)
	require.True(t, allowed && cached)
}
