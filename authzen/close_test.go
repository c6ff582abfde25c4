package authzen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/leakcheck"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// todoRead is an evaluation the Todo scenario allows.
var todoRead = authzen.Request{
	Subject:  authzen.Subject{Type: "user", ID: "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"},
	Action:   authzen.Action{Name: "can_read_todos"},
	Resource: authzen.Resource{Type: "todo", ID: "todo-1"},
}

// TestCloseReleasesConnections: a client on its default transport keeps
// idle keep-alive connections to a PDP that is still up; Close closes them
// (no goroutine is left), and every call after it fails with ErrClosed,
// a cached answer included, sending nothing. Not parallel: the leak check
// looks at every goroutine.
func TestCloseReleasesConnections(t *testing.T) {
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"))
	before := leakcheck.Current()
	c := mustAuthZEN(t, srv.URL+"/realms/todo")
	c.SetToken(srv.Token("todo", "service-account-todo-api"))
	d := evaluated(t, c, todoRead) // discovery, then the evaluation
	require.True(t, d.Allowed())
	sent := c.Stats().PDPRequests

	require.NoError(t, c.Close())
	leakcheck.VerifyNone(t, before)

	d, err := c.Evaluate(t.Context(), todoRead)
	require.ErrorIs(t, err, authzen.ErrClosed)
	assert.False(t, d.Allowed())
	require.ErrorIs(t, d.Cause, authzen.ErrClosed)
	_, err = c.Evaluations(t.Context(), authzen.Request{}, []authzen.Request{todoRead})
	require.ErrorIs(t, err, authzen.ErrClosed)
	_, err = c.SearchAction(t.Context(), authzen.Request{Subject: todoRead.Subject, Resource: todoRead.Resource})
	require.ErrorIs(t, err, authzen.ErrClosed)
	require.ErrorIs(t, c.Discover(t.Context()), authzen.ErrClosed)
	assert.Equal(t, sent, c.Stats().PDPRequests, "nothing is sent after Close")
	require.NoError(t, c.Close(), "closing twice is harmless")
}
