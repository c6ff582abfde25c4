package authzen_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/invalidationtest"
)

// TestRemotePurgeRetiresRequestsInFlight is pep's, for authzen (the same
// core): once this client has applied another replica's Purge of its
// credential, no Evaluate that begins after shares the answer of a
// request sent before it, whether or not the credential's decisions are
// cached here. The PDP allowed the request sent before the revocation
// and refuses every later one.
func TestRemotePurgeRetiresRequestsInFlight(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		cache authzen.Option
		token string
	}{
		{"cache on", authzen.WithCache(100, time.Minute, time.Minute), pepToken},
		{"cache off", authzen.WithCache(0, 0, 0), pepToken},
		{"token over 8 KiB", authzen.WithCache(100, time.Minute, time.Minute), pepToken + strings.Repeat("x", 9000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sent, release, closing := make(chan struct{}), make(chan struct{}), make(chan struct{})
			t.Cleanup(func() { close(closing) }) // before the server closes
			var n atomic.Int32
			ch := invalidationtest.NewLong()
			waiting := make(chan struct{}, 2)
			c, srv := standIn(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) > 1 { // the credential was revoked after the first request was sent
					w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
					answer(http.StatusUnauthorized, `{"error":"Unauthorized","message":"token revoked"}`)(w, r)
					return
				}
				close(sent)
				select {
				case <-release:
				case <-closing:
				}
				answer(http.StatusOK, `{"decision":true}`)(w, r)
			}, tt.cache, authzen.WithInvalidator(ch), authzen.WithFlightWaitHook(func() { waiting <- struct{}{} }))
			t.Cleanup(func() { _ = c.Close() })
			other := mustAuthZEN(t, srv.URL, authzen.WithInvalidator(ch)) // another replica
			<-ch.Joined
			<-ch.Joined
			c.SetToken(tt.token)

			first := make(chan authzen.Decision, 1)
			go func() {
				d, _ := c.Evaluate(t.Context(), req)
				first <- d
			}()
			<-waiting
			<-sent
			require.NoError(t, other.Purge(t.Context(), tt.token)) // applied here before it returns

			second := make(chan authzen.Decision, 1)
			go func() {
				d, _ := c.Evaluate(t.Context(), req)
				second <- d
			}()
			<-waiting // the second call has joined a request: its own, or the first's
			close(release)
			assert.True(t, (<-first).Allowed(), "the call begun before the purge has the answer to its request")
			d := <-second
			require.False(t, d.Allowed(), "an Evaluate begun after the remote purge shared the request sent before it")
			require.ErrorIs(t, d.Cause, authzen.ErrUnauthorized)
		})
	}
}
