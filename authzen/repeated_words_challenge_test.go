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

// TestAQuotedPairSpelledResourceIDInAChallengeRetiresNoToken: pep's
// TestAQuotedPairSpelledWordInAChallengeRetiresNoToken for a PDP and a
// resource id (a-fix17c F5).
func TestAQuotedPairSpelledResourceIDInAChallengeRetiresNoToken(t *testing.T) {
	t.Parallel()
	const id = `42", error="inv\alid_token`
	srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(b, []byte(`alid_token`)) {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", resource="`+id+`"`)
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":"forbidden"}`))
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
}
