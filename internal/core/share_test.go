package core

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWhatALaterCallShares: bob's call is at the server when something
// happens; then an identical call of bob's begins. It shares the request
// under way only if nothing since could make that request's answer older
// than one the client has had: not after a purge of bob's token or of
// every token, nor as a call that reads no cached decision (NoCache); a
// purge of another token splits nothing of bob's.
func TestWhatALaterCallShares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		between func(t *testing.T, c *Core)
		noCache bool
		// wantShared is whether the later call shared the request under
		// way (one request sent) or sent its own (two).
		wantShared bool
	}{
		{"nothing", func(*testing.T, *Core) {}, false, true},
		{"a purge of another token", func(t *testing.T, c *Core) { require.NoError(t, c.Purge(t.Context(), "alice")) }, false, true},
		{"a purge of bob's token", func(t *testing.T, c *Core) { require.NoError(t, c.Purge(t.Context(), "bob")) }, false, false},
		{"a purge of every token", func(t *testing.T, c *Core) { require.NoError(t, c.PurgeAll(t.Context())) }, false, false},
		{"the later call is NoCache", func(*testing.T, *Core) {}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var sends atomic.Int32
			arrived, release := make(chan struct{}), make(chan struct{})
			server := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if sends.Add(1) == 1 {
					close(arrived)
					<-release
				}
				return answer200(r, `{}`), nil
			})
			joins := make(chan struct{}, 2)
			c := newCore(t, server, func(s *Settings) { s.FlightWait = func() { joins <- struct{}{} } })
			check := func(noCache bool) error {
				var cl Call
				if err := c.PerCall(&cl, "bob", noCache); err != nil {
					return err
				}
				cred, err := c.Credential(&cl)
				if err != nil {
					return err
				}
				ctx, cancel := c.Bound(context.Background(), &cl)
				defer cancel()
				_, _, w, err := c.Send(ctx, &cl, cred, "https://gw.example/decide", []byte(`{"orders":"read"}`), nil)
				w.Close()
				return err
			}
			var wg sync.WaitGroup
			wg.Go(func() { assert.NoError(t, check(false)) })
			<-joins
			<-arrived
			tt.between(t, c)
			wg.Go(func() { assert.NoError(t, check(tt.noCache)) })
			<-joins // the later call has joined the request under way, or led its own
			close(release)
			wg.Wait()
			want := int32(2)
			if tt.wantShared {
				want = 1
			}
			assert.Equal(t, want, sends.Load(), "requests sent")
			assert.Equal(t, tt.wantShared, c.coalesced.Load() == 1)
		})
	}
}
