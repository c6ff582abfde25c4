package pep_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestOneCallersTokenPastTheGatewaysHeaderLimitOpensNoBreaker: a token
// within WithMaxTokenBytes that the gateway's HTTP/2 server says it cannot
// take (SETTINGS_MAX_HEADER_LIST_SIZE, from MaxHeaderBytes) is refused by
// Go's HTTP/2 client before it is written. That is the request's fault, not
// the gateway's: the caller is denied, the request is not retried, and the
// breaker every caller shares does not count it (a-client10 F1: five
// made-up 12 KiB tokens, no credential needed, opened it for everyone).
func TestOneCallersTokenPastTheGatewaysHeaderLimitOpensNoBreaker(t *testing.T) {
	t.Parallel()
	gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`))
	}))
	gw.EnableHTTP2 = true
	// A gateway hardened against large headers: 8 KiB, half the client's
	// own bound for a token.
	gw.Config.MaxHeaderBytes = 8 << 10
	gw.StartTLS()
	t.Cleanup(gw.Close)

	c := mustPep(t, gw.URL, "shop", "orders-api",
		pep.WithHTTPClient(gw.Client()), pep.WithBreaker(5, time.Minute), pep.WithCache(0, 0, 0))

	// A legitimate caller is granted.
	d := checkedIn(t, c, pep.WithToken(t.Context(), "alice-token"), "orders", "read")
	require.True(t, d.Allowed(), "the legitimate caller first: %v", d.Cause)

	// One unauthenticated caller, five requests with a made-up token of
	// 12 KiB: within the client's bound, a token the client says it sends.
	junk := strings.Repeat("A", 12<<10)
	for range 5 {
		d := checkedIn(t, c, pep.WithToken(t.Context(), junk), "orders", "read")
		require.False(t, d.Allowed())
		require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
		require.NotContains(t, d.Cause.Error(), junk[:64], "the token is in the cause")
	}
	assert.Zero(t, c.Stats().Retries, "a request the transport will not write is retried")

	// The legitimate caller again: the gateway is well, and answers it.
	d = checkedIn(t, c, pep.WithToken(t.Context(), "alice-token"), "orders", "read")
	assert.False(t, errors.Is(d.Cause, pep.ErrCircuitOpen), "one caller's tokens opened the breaker for everyone: %v", d.Cause)
	assert.True(t, d.Allowed(), "a legitimate caller is denied: %v (breaker %v)", d.Cause, c.Stats().Breaker)
}

// TestADeadGatewayOpensTheBreakerWhateverTheTokenSize: a gateway that
// accepts each connection and closes or resets it at once (a TCP front of a
// dead process: docker-proxy, an L4 balancer) opens the breaker in five
// calls, for small tokens and for tokens past net/http's 4 KiB write buffer
// alike (a-fix10: such an attempt also fails before its headers are
// written, and was taken for the client's own refusal of a token too large
// for an HTTP/2 peer: neutral, and the breaker never opened).
func TestADeadGatewayOpensTheBreakerWhateverTheTokenSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		reset bool
		token int
	}{
		{"close, small token", false, 64},
		{"close, 8 KiB token", false, 8 << 10},
		{"reset, small token", true, 64},
		{"reset, 8 KiB token", true, 8 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustPep(t, closingGateway(t, tc.reset), "shop", "orders-api",
				pep.WithBreaker(5, time.Minute), pep.WithCache(0, 0, 0))
			tok := strings.Repeat("A", tc.token)
			for range 5 {
				d := checkedIn(t, c, pep.WithToken(t.Context(), tok), "orders", "read")
				require.False(t, d.Allowed())
				require.NotErrorIs(t, d.Cause, pep.ErrCircuitOpen, "open before five failures")
			}
			d := checkedIn(t, c, pep.WithToken(t.Context(), tok), "orders", "read")
			require.ErrorIs(t, d.Cause, pep.ErrCircuitOpen, "five calls to a dead gateway left the breaker %v", c.Stats().Breaker)
		})
	}
}

// closingGateway is a dead gateway behind a TCP front: it accepts every
// connection and closes it at once, with a reset (reset) or a FIN.
func closingGateway(t *testing.T, reset bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if reset {
				_ = c.(*net.TCPConn).SetLinger(0)
			}
			_ = c.Close()
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String()
}
