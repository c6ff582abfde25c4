package authzen_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestEveryRefusalPurgesAndExpiresTheTokenOnce: whichever call the PDP
// refuses the client's credential on (a 401), searches included, the
// credential's cached decisions are gone at once and tokenExpired is
// emitted once however many calls are refused. The error matches both
// clients' sentinel.
func TestEveryRefusalPurgesAndExpiresTheTokenOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		call func(ctx context.Context, c *authzen.Client) error
	}{
		{"Evaluate", func(ctx context.Context, c *authzen.Client) error {
			_, err := c.Evaluate(ctx, todoRead, authzen.NoCache())
			return err
		}},
		{"Evaluations", func(ctx context.Context, c *authzen.Client) error {
			_, err := c.Evaluations(ctx, todoRead, []authzen.Request{{}, {Action: authzen.Action{Name: "can_update_todo"}}}, authzen.NoCache())
			return err
		}},
		{"SearchSubject", func(ctx context.Context, c *authzen.Client) error {
			_, err := c.SearchSubject(ctx, todoRead)
			return err
		}},
		{"SearchResource", func(ctx context.Context, c *authzen.Client) error {
			_, err := c.SearchResource(ctx, todoRead)
			return err
		}},
		{"SearchAction", func(ctx context.Context, c *authzen.Client) error {
			_, err := c.SearchAction(ctx, todoRead)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var shift atomic.Int64
			now := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
			srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"),
				mockserver.WithAccessTokenAlgorithm("ES256"), mockserver.WithClock(now))
			var mu sync.Mutex
			var kinds []events.Kind
			c, err := hangguard.NewAuthZEN(srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()),
				authzen.WithEventHandler(func(e events.Event) {
					mu.Lock()
					defer mu.Unlock()
					kinds = append(kinds, e.Kind)
				}))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			c.SetToken(srv.Token("todo", "service-account-todo-api", mockserver.TokenLifetime(time.Minute)))
			for _, cached := range []bool{false, true} {
				d := evaluated(t, c, todoRead)
				require.True(t, d.Allowed())
				require.Equal(t, cached, d.Cached)
			}

			shift.Store(int64(2 * time.Minute)) // the token has expired
			for range 3 {
				require.ErrorIs(t, tt.call(t.Context(), c), pep.ErrUnauthorized)
			}
			d, err := c.Evaluate(t.Context(), todoRead)
			require.ErrorIs(t, err, authzen.ErrUnauthorized, "the cached decision outlived the refusal")
			assert.False(t, d.Allowed())
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, kinds)
		})
	}
}
