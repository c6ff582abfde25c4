package pep_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// recorder collects events; safe for concurrent use.
type recorder struct {
	mu  sync.Mutex
	evs []events.Event
}

func (r *recorder) handle(ev events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recorder) kinds() []events.Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []events.Kind
	for _, ev := range r.evs {
		ks = append(ks, ev.Kind)
	}
	return ks
}

func TestNoToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		clientUser  string // the client holds a token of this user
		clientToken string // or this one
		ctx         func(context.Context) context.Context
	}{
		{name: "no token at all", ctx: func(ctx context.Context) context.Context { return ctx }},
		{name: "empty per-call token does not fall back", clientUser: "alice", ctx: func(ctx context.Context) context.Context {
			return pep.WithToken(ctx, "")
		}},
		{name: "token with a newline", ctx: func(ctx context.Context) context.Context {
			return pep.WithToken(ctx, "abc\r\nX-Injected: 1")
		}},
		{name: "token with a space", clientToken: "abc def", ctx: func(ctx context.Context) context.Context { return ctx }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t)
			switch {
			case tt.clientUser != "":
				c.SetToken(g.token(t, tt.clientUser))
			case tt.clientToken != "":
				c.SetToken(tt.clientToken)
			}
			ctx := tt.ctx(t.Context())

			d, err := c.Check(ctx, "orders", "read")
			require.ErrorIs(t, err, pep.ErrNoToken)
			assert.False(t, d.Allowed())
			require.ErrorIs(t, d.Cause, pep.ErrNoToken)

			r, err := c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"read"}}})
			require.ErrorIs(t, err, pep.ErrNoToken)
			assert.False(t, r.Allowed())

			perms, err := c.ListGranted(ctx, nil)
			require.ErrorIs(t, err, pep.ErrNoToken)
			assert.Empty(t, perms)

			_, err = c.Organizations(ctx)
			require.ErrorIs(t, err, pep.ErrNoToken)
			require.ErrorIs(t, c.Verify(ctx), pep.ErrNoToken)

			assert.Equal(t, 0, g.count(), "no request is sent without a usable token")
		})
	}
}

func TestTokenEvents(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	var rec recorder
	c := g.newClient(t, pep.WithEventHandler(rec.handle))
	var second []events.Kind
	unsubscribe := c.Subscribe(func(ev events.Event) { second = append(second, ev.Kind) })

	c.ClearToken() // no token: nothing to clear, nothing emitted
	c.SetToken(g.token(t, "alice"))
	c.SetToken(g.token(t, "bob"))
	unsubscribe()
	c.ClearToken()
	c.SetToken("") // the same as ClearToken: nothing left to clear

	assert.Equal(t, []events.Kind{events.TokenSet, events.TokenSet, events.TokenCleared}, rec.kinds())
	assert.Equal(t, []events.Kind{events.TokenSet, events.TokenSet}, second)
	for _, ev := range rec.evs {
		assert.Equal(t, "Bearer", ev.TokenType)
		assert.NoError(t, ev.Err)
	}
	_, err := c.Check(t.Context(), "orders", "read")
	require.ErrorIs(t, err, pep.ErrNoToken)
	assert.Equal(t, 0, g.count())
}

func TestPanickingHandlerDoesNotBreakTheClient(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	var logs bytes.Buffer
	var after int
	c := g.newClient(t,
		pep.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		pep.WithEventHandler(func(events.Event) { panic("handler bug") }),
		pep.WithEventHandler(func(events.Event) { after++ }),
	)
	require.NotPanics(t, func() { c.SetToken(g.expiredToken(t, "alice")) })
	require.NotPanics(t, func() {
		_, err := c.Check(t.Context(), "orders", "read")
		require.ErrorIs(t, err, pep.ErrUnauthorized)
	})
	assert.Equal(t, 2, after, "later handlers still run")
	assert.Contains(t, logs.String(), "handler bug")

	require.NotPanics(t, func() { c.SetToken(g.token(t, "alice")) }) // the refresh
	d := checked(t, c, "orders", "read")
	assert.True(t, d.Allowed(), "the client keeps working")
}

// errText returns what a caller can read of err: its text and, for a
// *pep.ResponseError, every field the gateway's answer filled in.
func errText(err error) string {
	if err == nil {
		return ""
	}
	var re *pep.ResponseError
	if errors.As(err, &re) {
		return err.Error() + "\n" + re.ErrorName + "\n" + re.Message + "\n" + re.Challenge
	}
	return err.Error()
}
