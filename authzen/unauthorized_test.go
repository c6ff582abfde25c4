package authzen_test

// A client that holds a token: a 401 for it is an error that matches both
// clients' sentinel, and a client whose token was cleared sends nothing.

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

func TestNoTokenSendsNothing(t *testing.T) {
	t.Parallel()
	c, n := standIn(t, answer(200, `{"decision":true}`))
	c.ClearToken()
	_, err := c.Evaluate(t.Context(), req)
	require.ErrorIs(t, err, authzen.ErrNoToken)
	assert.Zero(t, n.Requests())
}
