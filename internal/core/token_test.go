package core

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// TestARefusedTokenExpiresOnce: what a 401 does to the token lifecycle.
// The client's own current token expires once (one tokenExpired however
// many calls the server refuses, concurrently) and its cached decisions
// go; a per-call token's decisions go without an event, the client's own
// token untouched; a token replaced while its call was out emits nothing
// more; a call that sent no credential purges nothing and emits nothing.
func TestARefusedTokenExpiresOnce(t *testing.T) {
	t.Parallel()
	own := transport.Ident{Scheme: transport.SchemeBearer, Token: "tok"}
	perCall := transport.Ident{Scheme: transport.SchemeBearer, Token: "per-call"}
	none := transport.Ident{Scheme: transport.SchemeNone}
	tests := []struct {
		name string
		// setup runs after SetBearer("tok"); call fills in a call's token;
		// during runs while the first request is at the server.
		setup  func(c *Core)
		call   func(c *Core, cl *Call) error
		during func(c *Core)
		calls  int
		want   []events.Kind
		// purged are the tokens whose cached decision must be gone, kept
		// those whose must stay.
		purged, kept []transport.Ident
	}{
		{
			name:   "the client's own token, refused by concurrent calls",
			call:   func(c *Core, cl *Call) error { return c.Own(cl, true) },
			calls:  8,
			want:   []events.Kind{events.TokenSet, events.TokenExpired},
			purged: []transport.Ident{own},
			kept:   []transport.Ident{perCall},
		},
		{
			name:   "a per-call token",
			call:   func(c *Core, cl *Call) error { return c.PerCall(cl, perCall.Token, true) },
			calls:  1,
			want:   []events.Kind{events.TokenSet},
			purged: []transport.Ident{perCall},
			kept:   []transport.Ident{own},
		},
		{
			name:   "a token replaced while its call was out",
			call:   func(c *Core, cl *Call) error { return c.Own(cl, true) },
			during: func(c *Core) { c.SetBearer("tok2") },
			calls:  1,
			want:   []events.Kind{events.TokenSet, events.TokenSet},
			purged: []transport.Ident{own}, // by the replacement
			kept:   []transport.Ident{perCall},
		},
		{
			name:  "a call that sent no credential",
			setup: func(c *Core) { c.SetNone() },
			call:  func(c *Core, cl *Call) error { return c.Own(cl, true) },
			calls: 1,
			want:  []events.Kind{events.TokenSet},
			kept:  []transport.Ident{none, perCall},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var once sync.Once
			var c *Core
			refuse := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if tt.during != nil {
					once.Do(func() { tt.during(c) })
				}
				body := `{"error":"Unauthorized","message":"token expired"}`
				return &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{},
					Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
			})
			var mu sync.Mutex
			var got []events.Kind
			c = newCore(t, refuse, func(s *Settings) {
				s.Handlers = append(s.Handlers, func(e events.Event) {
					mu.Lock()
					got = append(got, e.Kind)
					mu.Unlock()
				})
			})
			if tt.setup != nil {
				tt.setup(c)
			}
			for _, id := range []transport.Ident{own, perCall, none} {
				w := c.cache.writer(id)
				w.Add("orders#read", true)
				w.Close()
			}

			var wg sync.WaitGroup
			for range tt.calls {
				wg.Go(func() {
					var cl Call
					require.NoError(t, tt.call(c, &cl))
					err := c.Exchange(t.Context(), &cl, func(_ context.Context, post Poster) error {
						_, err := post("https://gw.example/decide", []byte(`{}`), nil)
						return err
					})
					assert.ErrorIs(t, err, transport.ErrUnauthorized)
				})
			}
			wg.Wait()
			mu.Lock()
			assert.Equal(t, tt.want, got)
			mu.Unlock()
			for _, id := range tt.purged {
				_, ok := c.cache.lru.Get(id, "orders#read")
				assert.False(t, ok, "%s's decision outlived the refusal", id.Token)
			}
			for _, id := range tt.kept {
				_, ok := c.cache.lru.Get(id, "orders#read")
				assert.True(t, ok, "%q's decision went with another's refusal", id.Token)
			}
		})
	}
}

// TestAChangedTokenTakesItsDecisions: whatever replaces the client's token
// (another token, the same one set again, a DPoP token, none) or clears
// it, the old token's cached decisions go with it; a per-call token's
// stay.
func TestAChangedTokenTakesItsDecisions(t *testing.T) {
	t.Parallel()
	own := transport.Ident{Scheme: transport.SchemeBearer, Token: "tok"}
	perCall := transport.Ident{Scheme: transport.SchemeBearer, Token: "per-call"}
	tests := []struct {
		name   string
		change func(c *Core)
	}{
		{"SetBearer", func(c *Core) { c.SetBearer("tok2") }},
		{"SetBearer with the same token", func(c *Core) { c.SetBearer("tok") }},
		{"SetDPoP", func(c *Core) { c.SetDPoP("tok", nil) }},
		{"ClearToken", func(c *Core) { c.ClearToken() }},
		{"SetBearer of an empty token", func(c *Core) { c.SetBearer("") }},
		{"SetNone", func(c *Core) { c.SetNone() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCore(t, roundTripFunc(func(r *http.Request) (*http.Response, error) { return answer200(r, `{}`), nil }), nil)
			for _, id := range []transport.Ident{own, perCall} {
				w := c.cache.writer(id)
				w.Add("orders#read", true)
				w.Close()
			}
			tt.change(c)
			_, ok := c.cache.lru.Get(own, "orders#read")
			assert.False(t, ok, "the old token's decision outlived its change")
			_, ok = c.cache.lru.Get(perCall, "orders#read")
			assert.True(t, ok, "a per-call token's decision went with the client's token")
		})
	}
}
