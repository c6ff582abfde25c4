package authzen_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// TestALateRefusalRetiresTheToken (pep's twin, for a PDP): a 403 naming
// invalid_token read just past the call's deadline retires the token, and
// its cached allow is served no more (a-read17b F1: the 403 was dropped as
// "unavailable" before it was read).
func TestALateRefusalRetiresTheToken(t *testing.T) {
	t.Parallel()
	var revoked atomic.Bool
	unfired := frozentest.NewUnfired(time.Minute)
	srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if revoked.Load() {
			unfired.Pass()
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":"invalid_token"}`))
			return
		}
		_, _ = w.Write([]byte(`{"decision":true}`))
	})
	c := mustAuthZEN(t, srv.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
		authzen.WithHTTPClient(srv.Client()), authzen.WithRetry(0, 0, 0))
	c.SetToken("bearer-token-of-the-service")
	cached := authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"}, Action: authzen.Action{Name: "can_read"},
		Resource: authzen.Resource{Type: "document", ID: "42"}}
	d, err := c.Evaluate(t.Context(), cached)
	require.NoError(t, err)
	require.True(t, d.Allowed(), "cached allow")

	revoked.Store(true)
	miss := cached
	miss.Resource.ID = "43"
	d, err = c.Evaluate(context.Context(unfired), miss)
	if err == nil {
		err = d.Cause
	}
	require.Error(t, err)
	assert.ErrorIs(t, err, authzen.ErrUnauthorized, "the PDP refused the token, however late; got %v", err)

	d, err = c.Evaluate(t.Context(), cached)
	assert.False(t, err == nil && d.Allowed(), "the refused token's cached allow is still served")
}
