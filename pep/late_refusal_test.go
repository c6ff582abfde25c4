package pep_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestALateRefusalRetiresTheToken: a 403 (or 400) whose body names
// invalid_token refuses the token however late it was read, as a 401 does
// (a-client12b F1): read just past the call's deadline (a process frozen
// while the gateway answered), the revoked token's cached GRANT is served
// no more and tokenExpired is emitted (a-read17b F1, high: the 400/403 was
// dropped as "unavailable" before it was read).
func TestALateRefusalRetiresTheToken(t *testing.T) {
	t.Parallel()
	for _, a := range []struct {
		name   string
		status int
	}{
		{"403", http.StatusForbidden},
		{"400", http.StatusBadRequest},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t, pep.WithTimeout(time.Hour), noRetry)
			c.SetToken(g.token(t, "alice"))
			expired := make(chan struct{}, 4)
			t.Cleanup(c.Subscribe(func(e events.Event) {
				if e.Kind == events.TokenExpired {
					expired <- struct{}{}
				}
			}))
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.True(t, d.Allowed(), "alice reads orders: %v", d.Cause)

			unfired := frozentest.NewUnfired(time.Minute)
			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				unfired.Pass()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(a.status)
				_, _ = w.Write([]byte(`{"error":"invalid_token","message":"the token was revoked"}`))
				return true
			})
			d, err = c.Check(context.Context(unfired), "orders", "write")
			require.False(t, d.Allowed())
			assert.True(t, errors.Is(err, pep.ErrUnauthorized) || errors.Is(d.Cause, pep.ErrUnauthorized),
				"a refusal read late still refuses the token; got err=%v cause=%v", err, d.Cause)

			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool { // the gateway fails
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			})
			d, err = c.Check(t.Context(), "orders", "read")
			g.setHook(nil)
			assert.False(t, d.Allowed(), "the refused token's cached GRANT must be gone; got cached=%v err=%v", d.Cached, err)
			select {
			case <-expired:
			case <-time.After(10 * time.Second): // a hang guard: delivery ends with the call
				t.Error("no tokenExpired for the own token after the client read its refusal")
			}
		})
	}
}
