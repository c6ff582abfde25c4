package pep_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// TestTokenChangeStopsTheCall: a call made with the client's own token
// whose token is replaced or cleared while the call is under way fails
// closed at its next step, whichever it is: the request not yet sent, a
// retry (which would carry a fresh proof for the old token), or an answer
// on its way. The decision is DENY with ErrTokenChanged and a nil error;
// the breaker does not count it; nothing is cached for the old token or the
// new one, however the cache writer and the purge fall.
func TestTokenChangeStopsTheCall(t *testing.T) {
	t.Parallel()
	type tokens struct{ old, bob string }
	changes := []struct {
		name string
		// dpop makes the old token DPoP-bound.
		dpop bool
		// change replaces or clears the client's token; it may run on the
		// server's goroutine, so it must not fail the test.
		change func(c *pep.Client, tk tokens)
		// stillHeld reports whether the client holds a token afterwards,
		// and same whether it is the old token's string.
		stillHeld, same bool
	}{
		{name: "SetToken", change: func(c *pep.Client, tk tokens) { c.SetToken(tk.bob) }, stillHeld: true},
		{name: "SetToken of the same token", change: func(c *pep.Client, tk tokens) { c.SetToken(tk.old) }, stillHeld: true, same: true},
		{name: "ClearToken", change: func(c *pep.Client, _ tokens) { c.ClearToken() }},
		{name: "SetToken after a DPoP-bound token", dpop: true, change: func(c *pep.Client, tk tokens) { c.SetToken(tk.bob) }, stillHeld: true},
	}
	moments := []struct {
		name string
		// sent is how many requests reach the server.
		sent int
	}{
		{"before the request is sent", 0},
		{"before the retry", 1},
		{"while the answer is on its way", 1},
	}
	for _, ch := range changes {
		for _, m := range moments {
			t.Run(ch.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				g := startReference(t)
				signer, err := dpop.GenerateKey()
				require.NoError(t, err)
				var tokenOpts []mockserver.TokenOption
				if ch.dpop {
					tokenOpts = append(tokenOpts, mockserver.TokenDPoPBinding(signer.Thumbprint()))
				}
				tk := tokens{old: g.token(t, "alice", tokenOpts...), bob: g.token(t, "bob")}

				var (
					c     *pep.Client
					armed atomic.Bool
				)
				change := func() {
					if armed.CompareAndSwap(true, false) {
						ch.change(c, tk)
					}
				}
				opts := []pep.Option{fastRetry, pep.WithBreaker(1, time.Hour)}
				switch m.name {
				case "before the request is sent":
					// A caller joins its flight just before it sends.
					opts = append(opts, pep.WithFlightWaitHook(change))
				case "before the retry":
					g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
						change()
						writeError(w, http.StatusServiceUnavailable, "busy")
						return true
					})
				default:
					g.setHook(func(http.ResponseWriter, *http.Request, int) bool {
						change()
						return false // the server grants
					})
				}
				c = g.newClient(t, opts...)
				if ch.dpop {
					c.SetDPoPToken(tk.old, signer)
				} else {
					c.SetToken(tk.old)
				}
				armed.Store(true)

				d, err := c.Check(t.Context(), "orders", "read")
				require.NoError(t, err, "a fail-closed denial, not an error")
				assert.False(t, d.Allowed())
				require.ErrorIs(t, d.Cause, pep.ErrTokenChanged)
				assert.NotErrorIs(t, d.Cause, pep.ErrUnavailable, "the gateway is not at fault")
				assert.Equal(t, m.sent, g.count(), "nothing is sent after the change")
				assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker, "WithBreaker(1, ...) did not count it")
				assert.Zero(t, c.Stats().CacheEntries, "nothing was cached")

				g.setHook(nil)
				if ch.stillHeld { // the new token: nothing cached for it
					d = checked(t, c, "orders", "read")
					assert.False(t, d.Cached)
				}
				if !ch.dpop && !ch.same { // the old token, as a per-call token: nothing cached for it either
					d = checkedIn(t, c, pep.WithToken(t.Context(), tk.old), "orders", "read")
					assert.False(t, d.Cached)
					requireGatewayDecision(t, d, pep.Grant)
				}
			})
		}
	}
}
