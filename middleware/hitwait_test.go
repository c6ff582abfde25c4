package middleware_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// whileAsked is a transport to the reference server that runs wait once
// the server has answered a request whose body holds match, before the
// client reads the answer: what happens while the client waits for the
// gateway.
type whileAsked struct {
	next  http.RoundTripper
	match string
	wait  func()
}

func (a whileAsked) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := a.next.RoundTrip(r)
	if err == nil && bytes.Contains(body, []byte(a.match)) {
		a.wait()
	}
	return resp, err
}

// TestCachedGrantIsReadAgainAfterTheWait (a-client13 F2): a request to
// edit an order needs orders/read, which the client has cached, and
// orders/write, which it asks the gateway about. While it waits, cat's
// token is revoked at the server, and her cached decisions are purged
// (Purge, as an invalidation message does): the request is asked about
// again and refused (401), not let through on the GRANT read before the
// wait. Without the purge, the GRANT still stands (within its TTL, the
// cache's promise) and the request goes through, asking about write alone.
// (An entry whose TTL runs out during the wait takes the same path, read
// again after it: pep's TestHitsAreReadAgainAfterTheWait sets
// the client's clock, which this package cannot.)
func TestCachedGrantIsReadAgainAfterTheWait(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		wait func(c *pep.Client, token string)
		want int
		// wantRequests counts the gateway requests of the edit.
		wantRequests uint64
	}{
		{"the entry still serves", func(*pep.Client, string) {}, http.StatusOK, 1},
		{"the token's decisions are purged", func(c *pep.Client, token string) {
			if err := c.Purge(context.Background(), token); err != nil {
				panic(err) // the test's goroutine is waiting for the answer: the panic fails the test
			}
		}, http.StatusUnauthorized, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
			tok := gw.Token("shop", "cat", mockserver.TokenClient("orders-api")) // a viewer and a manager: reads and writes orders
			var c *pep.Client
			revokeAnd := func() { // on the client's goroutine, maybe not the test's: a failure panics
				form := url.Values{"client_id": {"orders-api"}, "client_secret": {"s3cret"}, "token": {tok}}
				resp, err := gw.Client().PostForm(gw.URL+"/realms/shop/protocol/openid-connect/revoke", form)
				if err != nil || resp.StatusCode != http.StatusOK {
					panic(fmt.Sprintf("revoke: %v %v", resp, err))
				}
				_ = resp.Body.Close()
				tt.wait(c, tok)
			}
			c = newPep(t, gw, "shop", "orders-api", pep.WithHTTPClient(&http.Client{Transport: whileAsked{next: gw.Client().Transport, match: `"write"`, wait: revokeAnd}}))
			guard := middleware.RequireFunc(c, func(r *http.Request) (string, []string) {
				if r.URL.Query().Get("edit") != "" {
					return "orders", []string{"read", "write"}
				}
				return "orders", []string{"read"}
			})
			h := guard(orderHandler)
			get := func(target string) int {
				req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, target, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				return w.Code
			}
			require.Equal(t, http.StatusOK, get("/orders/42")) // orders/read GRANT cached
			before := c.Stats().GatewayRequests
			assert.Equal(t, tt.want, get("/orders/42?edit=1"))
			assert.Equal(t, tt.wantRequests, c.Stats().GatewayRequests-before)
			if tt.want != http.StatusOK {
				assert.NotEqual(t, http.StatusOK, get("/orders/42"), "a request after it")
			}
		})
	}
}
