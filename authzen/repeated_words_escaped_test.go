package authzen_test

import (
	"bytes"
	"encoding/json"
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

// TestAnEscapedResourceIDRepeatedRetiresNoToken: pep's
// TestAnEscapedWordRepeatedRetiresNoToken for a PDP and a resource id
// (a-fix17 F1).
func TestAnEscapedResourceIDRepeatedRetiresNoToken(t *testing.T) {
	t.Parallel()
	const id = `invalid\u005ftoken`
	for _, tc := range []struct {
		name, ct, body string
	}{
		{"400 plain text", "text/plain", "unknown resource " + id + "\n"},
		{"403 JSON templated without escaping", "application/json", `{"error":"forbidden","resourceId":"` + id + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status := 400
			if tc.name[:3] == "403" {
				status = 403
			}
			srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if bytes.Contains(b, []byte(`invalid\\u005ftoken`)) {
					w.Header().Set("Content-Type", tc.ct)
					w.WriteHeader(status)
					_, _ = w.Write([]byte(tc.body))
					return
				}
				w.Header().Set("Content-Type", "application/json")
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
			attack.Resource.ID = id // the caller's choice
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

// TestAnEscapedPropertyRepeatedRetiresNoToken: a property sent as raw
// JSON holding the word escaped ("invalid\u005ftoken"), which the PDP reads
// as invalid_token and repeats, retires no token (a-fix17 F7).
func TestAnEscapedPropertyRepeatedRetiresNoToken(t *testing.T) {
	t.Parallel()
	srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(b, []byte(`invalid\u005ftoken`)) {
			w.WriteHeader(http.StatusBadRequest)
			// the PDP decoded the request's JSON and repeats the value as JSON again
			_, _ = w.Write([]byte(`{"error":"invalid_request","message":"unknown property value","value":"invalid_token"}`))
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
	attack.Resource.Properties = map[string]any{"label": json.RawMessage(`"invalid\u005ftoken"`)} // the caller's JSON
	d, err = c.Evaluate(t.Context(), attack)
	if err == nil {
		err = d.Cause
	}
	assert.NotErrorIs(t, err, authzen.ErrUnauthorized, "the PDP only repeated the caller's property value: %v", err)
	mu.Lock()
	got := slices.Clone(kinds)
	mu.Unlock()
	assert.False(t, slices.Contains(got, events.TokenExpired), "a caller's property value retired the shared token: %v", got)
	d, err = c.Evaluate(t.Context(), cached)
	require.NoError(t, err)
	assert.True(t, d.Allowed() && d.Cached, "the valid token's cached allow must stay; cached=%v", d.Cached)
}
