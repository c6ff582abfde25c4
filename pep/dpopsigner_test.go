package pep_test

// The same DPoP token set again without its signer (the documented "a nil
// signer makes every call fail with ErrNoToken") is not answered from the
// GRANTs its identity holds in the cache.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

func TestSameDPoPTokenWithoutSignerGetsNoCachedGrant(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c, _, tok := g.dpopClient(t, "alice", nil)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	require.True(t, d.Allowed())
	d, err = c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	require.True(t, d.Cached)

	c.SetDPoPToken(tok, nil)
	d, err = c.Check(t.Context(), "orders", "read")
	assert.False(t, d.Allowed(), "a GRANT served to a DPoP token the client can no longer prove")
	require.ErrorIs(t, err, pep.ErrNoToken)
}
