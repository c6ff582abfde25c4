package pep_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/respell"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// TestRemotePurgeRetiresRequestsInFlight: once a token is retired
// (another replica's Purge this client has applied; this client's own
// Purge or a 401, under another spelling of the token:
// TestARetiredTokenSharesNoRequestUnderAnotherSpelling), no call that
// begins after shares the answer of a request sent before it, whether or
// not the token's decisions are cached here: with the cache off, for a
// token too long to cache (over 8 KiB), for a per-call token, as for a
// cached one. The gateway granted the request sent before the revocation
// and refuses every later one.
func TestRemotePurgeRetiresRequestsInFlight(t *testing.T) {
	t.Parallel()
	on, off := pep.WithCache(100, time.Minute, time.Minute), pep.WithCache(0, 0, 0)
	long := "alice-" + strings.Repeat("x", 9000)
	for _, tt := range []struct {
		name    string
		cache   pep.Option
		token   string
		perCall bool
		// local retires tok on this client, whose calls send another
		// spelling of it; nil: another replica purges it.
		local func(t *testing.T, c *pep.Client, tok string)
	}{
		{"cache on", on, "alice-token", false, nil},
		{"cache off", off, "alice-token", false, nil},
		{"token over 8 KiB", on, long, false, nil},
		{"per-call token, cache off", off, "alice-token", true, nil},
		{"per-call token over 8 KiB", on, long, true, nil},
		{"TestARetiredTokenSharesNoRequestUnderAnotherSpelling/Purge", on, "", true, func(t *testing.T, c *pep.Client, tok string) {
			require.NoError(t, c.Purge(t.Context(), tok))
		}},
		{"TestARetiredTokenSharesNoRequestUnderAnotherSpelling/401", on, "", true, func(t *testing.T, c *pep.Client, tok string) {
			_, err := c.Check(pep.WithToken(t.Context(), tok), "orders", "read")
			require.ErrorIs(t, err, pep.ErrUnauthorized)
		}},
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
			waiting := make(chan struct{}, 3)
			opts := []pep.Option{noRetry, tt.cache, pep.WithFlightWaitHook(func() { waiting <- struct{}{} })}
			var c, other *pep.Client
			tok, sends := tt.token, tt.token
			if tt.local == nil {
				b := newLongBus()
				c, other = b.client(t, g, opts...), b.client(t, g) // another replica
			} else { // no invalidator: the retirement is this client's alone
				c = g.newClient(t, opts...)
				tok = g.token(t, "carol", mockserver.TokenClient(testClient))
				var err error
				sends, err = respell.UnusedBits(tok, respell.Signature)
				require.NoError(t, err)
			}
			ctx := context.Background()
			if tt.perCall {
				ctx = pep.WithToken(ctx, sends)
			} else {
				c.SetToken(sends)
			}

			first := make(chan pep.Decision, 1)
			go func() {
				d, _ := c.Check(ctx, "orders", "read")
				first <- d
			}()
			<-waiting
			<-sent
			asked := 2
			if tt.local == nil {
				require.NoError(t, other.Purge(t.Context(), tok))    // applied here before it returns
				require.Equal(t, uint64(2), c.Stats().Invalidations) // a message for this version, one for earlier ones
			} else if tt.local(t, c, tok); len(waiting) > 0 {
				<-waiting // the 401's call waited for its own request
				asked++
			}

			second := make(chan pep.Decision, 1)
			go func() {
				d, _ := c.Check(ctx, "orders", "read")
				second <- d
			}()
			<-waiting // the second call has joined a request: its own, or the first's
			close(release)
			assert.True(t, (<-first).Allowed(), "the call begun before the retirement has the answer to its request")
			d := <-second
			require.False(t, d.Allowed(), "a call begun after the retirement shared the request sent before it")
			require.ErrorIs(t, d.Cause, pep.ErrUnauthorized)
			assert.Equal(t, asked, g.count())
		})
	}
}
