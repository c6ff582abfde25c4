package authzen_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// TestAPDPRepeatingAResourceIDRetiresNoToken: a PDP that answers a
// request for a resource it does not know with a 400/403 repeating the
// request's resource id (a caller's choice, e.g. from a URL path) as a
// JSON value of its own retires no token when that id is invalid_token
// (a-read17 F1: it was read as a refusal of the client's own token, and
// any caller retired it for every caller, their cached allows purged).
func TestAPDPRepeatingAResourceIDRetiresNoToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"400 echoing the resource", 400, `{"error":"invalid_request","message":"unknown resource","resource":{"type":"document","id":"invalid_token"}}`},
		{"403 echoing the resource id", 403, `{"error":"forbidden","resourceId":"invalid_token"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "application/json")
				if bytes.Contains(b, []byte(`"invalid_token"`)) {
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(tc.body))
					return
				}
				_, _ = w.Write([]byte(`{"decision":true}`))
			})
			var mu sync.Mutex
			var kinds []events.Kind
			c := mustAuthZEN(t, srv.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
				authzen.WithHTTPClient(srv.Client()), authzen.WithRetry(0, 0, 0),
				authzen.WithEventHandler(func(ev events.Event) { mu.Lock(); kinds = append(kinds, ev.Kind); mu.Unlock() }))
			c.SetToken("the-service-own-token")
			cached := authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"}, Action: authzen.Action{Name: "can_read"},
				Resource: authzen.Resource{Type: "document", ID: "42"}}
			d, err := c.Evaluate(t.Context(), cached)
			require.NoError(t, err)
			require.True(t, d.Allowed())

			attack := cached
			attack.Resource.ID = "invalid_token" // the caller's choice
			d, err = c.Evaluate(t.Context(), attack)
			if err == nil {
				err = d.Cause
			}
			assert.NotErrorIs(t, err, authzen.ErrUnauthorized, "the PDP only repeated the caller's resource id: %v", err)
			mu.Lock()
			got := slices.Clone(kinds)
			mu.Unlock()
			assert.False(t, slices.Contains(got, events.TokenExpired), "a caller's resource id retired the shared token: %v", got)
			d, err = c.Evaluate(t.Context(), cached)
			require.NoError(t, err)
			assert.True(t, d.Allowed() && d.Cached, "the valid token's cached allow must stay; cached=%v", d.Cached)
		})
	}
}
