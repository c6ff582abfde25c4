package pep_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/pep"
)

// TestOversizedTokenLeavesTheBreakerClosed: three calls with a 256 KiB
// token must not open the breaker (WithBreaker(3, ...)) that every caller
// shares, as they did behind a front that resets connections on large
// headers (some load balancers do): the token is refused before it is
// sent, as ErrNoToken, and a caller with a real token still gets the
// reference server's GRANT.
func TestOversizedTokenLeavesTheBreakerClosed(t *testing.T) {
	t.Parallel()
	// Not one repeated character: a fragment of it must not show in the
	// error, whatever the fragment's position.
	huge := strings.Repeat("eyJhbGciOiJFUzI1NiJ9.", 256<<10/21+1)[:256<<10]
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	tests := []struct {
		name string
		// call makes one call with the huge token on c.
		call func(t *testing.T, c *pep.Client) (pep.Decision, error)
	}{
		{"per-call token", func(t *testing.T, c *pep.Client) (pep.Decision, error) {
			return c.Check(pep.WithToken(t.Context(), huge), "orders", "read")
		}},
		{"the client's Bearer token", func(t *testing.T, c *pep.Client) (pep.Decision, error) {
			c.SetToken(huge)
			return c.Check(t.Context(), "orders", "read")
		}},
		{"the client's DPoP token", func(t *testing.T, c *pep.Client) (pep.Decision, error) {
			c.SetDPoPToken(huge, signer)
			return c.Check(t.Context(), "orders", "read")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t, noRetry, pep.WithBreaker(3, time.Minute))
			for range 3 {
				d, err := tt.call(t, c)
				require.ErrorIs(t, err, pep.ErrNoToken)
				assert.False(t, d.Allowed())
				assert.Contains(t, err.Error(), "WithMaxTokenBytes", "the error names the setting")
				assert.NotContains(t, err.Error(), huge[:16], "the error holds nothing of the token")
			}
			assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
			assert.Zero(t, g.count(), "nothing was sent")

			c.SetToken(g.token(t, "alice"))
			d := checked(t, c, "orders", "read")
			requireGatewayDecision(t, d, pep.Grant)
		})
	}
}

// TestMaxTokenBytesIsTheBound: a token of exactly the bound is sent; one
// byte more is refused before anything is sent.
func TestMaxTokenBytesIsTheBound(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	tok := g.token(t, "alice")
	c := g.newClient(t, pep.WithMaxTokenBytes(len(tok)), pep.WithCache(0, 0, 0))
	c.SetToken(tok)
	d := checked(t, c, "orders", "read")
	requireGatewayDecision(t, d, pep.Grant)

	_, err := c.Check(pep.WithToken(t.Context(), tok+"x"), "orders", "read")
	require.ErrorIs(t, err, pep.ErrNoToken)
	assert.Equal(t, 1, g.count())
}
