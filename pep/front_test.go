package pep_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

// resettingFront starts a front on loopback that passes requests on to the
// server at target, one at a time per connection, and resets the
// connection (a TCP RST) of a request whose header is longer than limit
// bytes, as some load balancers do. The reference server answers 431 to
// such a header; a reset is what a front does, and what the breaker counts.
// It returns the front's base URL; the test's cleanup closes it.
func resettingFront(t *testing.T, target string, limit int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	upstream := &http.Transport{}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
	)
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
		upstream.CloseIdleConnections()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					_ = c.Close()
				}()
				relay(c, target, limit, upstream)
			})
		}
	})
	return "http://" + ln.Addr().String()
}

// relay serves the requests of one front connection.
func relay(c net.Conn, target string, limit int64, upstream http.RoundTripper) {
	lr := &io.LimitedReader{R: c, N: limit}
	br := bufio.NewReader(lr)
	for {
		lr.N = limit
		req, err := http.ReadRequest(br)
		if err != nil {
			if lr.N <= 0 { // the header outgrew the limit: reset
				_ = c.(*net.TCPConn).SetLinger(0)
			}
			return
		}
		lr.N = 1 << 30 // the body, which the header's limit does not bound
		req.RequestURI = ""
		req.URL.Scheme, req.URL.Host = "http", target
		resp, err := upstream.RoundTrip(req)
		if err != nil {
			return
		}
		err = resp.Write(c)
		_ = resp.Body.Close()
		if err != nil {
			return
		}
	}
}

// TestOversizedTokenLeavesTheBreakerClosed: behind a front that resets
// connections on large headers, three calls with a 256 KiB token must not
// open the breaker (WithBreaker(3, ...)) that every caller shares: the
// token is refused before it is sent, as ErrNoToken, and a caller with a
// real token still gets the reference server's GRANT.
func TestOversizedTokenLeavesTheBreakerClosed(t *testing.T) {
	t.Parallel()
	// Not one repeated character: a fragment of it must not show in the
	// error, whatever the fragment's position.
	huge := strings.Repeat("eyJhbGciOiJFUzI1NiJ9.", 256<<10/21+1)[:256<<10]
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	tests := []struct {
		name string
		// call makes one call with the huge token on c.
		call func(t *testing.T, c *pep.Client) (pep.Decision, error)
	}{
		{"per-call token", func(t *testing.T, c *pep.Client) (pep.Decision, error) {
			return c.Check(pep.WithToken(t.Context(), huge), "orders", "read")
		}},
		{"the client's Bearer token", func(t *testing.T, c *pep.Client) (pep.Decision, error) {
			c.SetToken(huge)
			return c.Check(t.Context(), "orders", "read")
		}},
		{"the client's DPoP token", func(t *testing.T, c *pep.Client) (pep.Decision, error) {
			c.SetDPoPToken(huge, signer)
			return c.Check(t.Context(), "orders", "read")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			front := resettingFront(t, g.Addr, 64<<10)
			c, err := hangguard.NewPep(front, testRealm, testClient, noRetry, pep.WithBreaker(3, time.Minute))
			require.NoError(t, err)
			for range 3 {
				d, err := tt.call(t, c)
				require.ErrorIs(t, err, pep.ErrNoToken)
				assert.False(t, d.Allowed())
				assert.Contains(t, err.Error(), "WithMaxTokenBytes", "the error names the setting")
				assert.NotContains(t, err.Error(), huge[:16], "the error holds nothing of the token")
			}
			assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
			assert.Zero(t, g.count(), "nothing was sent")

			c.SetToken(g.token(t, "alice"))
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			requireGatewayDecision(t, d, pep.Grant)
		})
	}
}

// TestMaxTokenBytesIsTheBound: a token of exactly the bound is sent; one
// byte more is refused before anything is sent.
func TestMaxTokenBytesIsTheBound(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	tok := g.token(t, "alice")
	c := g.newClient(t, pep.WithMaxTokenBytes(len(tok)), pep.WithCache(0, 0, 0))
	c.SetToken(tok)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)

	_, err = c.Check(pep.WithToken(t.Context(), tok+"x"), "orders", "read")
	require.ErrorIs(t, err, pep.ErrNoToken)
	assert.Equal(t, 1, g.count())
}
