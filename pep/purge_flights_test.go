package pep_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestRemotePurgeRetiresRequestsInFlight: once this client has applied
// another replica's Purge of a token, no call that begins after shares the
// answer of a request sent before it, whether or not the token's decisions
// are cached here: with the cache off, for a token too long to cache
// (over 8 KiB), for a per-call token, as for a cached one. The gateway
// granted the request sent before the revocation and refuses every later
// one.
func TestRemotePurgeRetiresRequestsInFlight(t *testing.T) {
	t.Parallel()
	long := "alice-" + strings.Repeat("x", 9000)
	for _, tt := range []struct {
		name    string
		cache   pep.Option
		token   string
		perCall bool
	}{
		{"cache on", pep.WithCache(100, time.Minute, time.Minute), "alice-token", false},
		{"cache off", pep.WithCache(0, 0, 0), "alice-token", false},
		{"token over 8 KiB", pep.WithCache(100, time.Minute, time.Minute), long, false},
		{"per-call token, cache off", pep.WithCache(0, 0, 0), "alice-token", true},
		{"per-call token over 8 KiB", pep.WithCache(100, time.Minute, time.Minute), long, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			sent, release := make(chan struct{}), make(chan struct{})
			g.setHook(func(w http.ResponseWriter, _ *http.Request, n int) bool {
				if n > 1 { // the token was revoked after the first request was sent
					w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
					writeError(w, http.StatusUnauthorized, "token revoked")
					return true
				}
				close(sent)
				select {
				case <-release:
				case <-g.closing:
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`))
				return true
			})
			b := newLongBus()
			waiting := make(chan struct{}, 2)
			c := b.client(t, g, noRetry, tt.cache, pep.WithFlightWaitHook(func() { waiting <- struct{}{} }))
			other := b.client(t, g) // another replica
			ctx := context.Background()
			if tt.perCall {
				ctx = pep.WithToken(ctx, tt.token)
			} else {
				c.SetToken(tt.token)
			}

			first := make(chan pep.Decision, 1)
			go func() {
				d, _ := c.Check(ctx, "orders", "read")
				first <- d
			}()
			<-waiting
			<-sent
			require.NoError(t, other.Purge(t.Context(), tt.token)) // applied here before it returns
			require.Equal(t, uint64(2), c.Stats().Invalidations)   // a message for this version, one for earlier ones

			second := make(chan pep.Decision, 1)
			go func() {
				d, _ := c.Check(ctx, "orders", "read")
				second <- d
			}()
			<-waiting // the second call has joined a request: its own, or the first's
			close(release)
			assert.True(t, (<-first).Allowed(), "the call begun before the purge has the answer to its request")
			d := <-second
			require.False(t, d.Allowed(), "a call begun after the remote purge shared the request sent before it")
			require.ErrorIs(t, d.Cause, pep.ErrUnauthorized)
			assert.Equal(t, 2, g.count())
		})
	}
}
