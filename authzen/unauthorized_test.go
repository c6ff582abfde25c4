package authzen_test

// A client that holds a token: a 401 for it is an error that matches both
// clients' sentinel. (A client whose token was cleared sends nothing:
// TestNoCredentialIsNeverTheDefault.)

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/pep"
)

func TestUnauthorizedIsAnError(t *testing.T) {
	t.Parallel()
	c, _ := standIn(t, answer(401, `{"error":"Unauthorized"}`))
	d, err := c.Evaluate(t.Context(), req)
	require.ErrorIs(t, err, authzen.ErrUnauthorized)
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	assert.False(t, d.Allowed())
}
