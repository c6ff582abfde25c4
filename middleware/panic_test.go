package middleware_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// panicSwitch is a user's RoundTripper around next that panics while
// armed, counting its panics.
type panicSwitch struct {
	next     http.RoundTripper
	armed    atomic.Bool
	panicked atomic.Int32
}

func (p *panicSwitch) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.armed.Load() {
		p.panicked.Add(1)
		panic(errors.New("a transient bug in the user's transport"))
	}
	return p.next.RoundTrip(r)
}

// The middleware recovers a panic under its Checker and refuses that one
// request (403). When the panic came under the client's half-open breaker
// probe, the probe is released with it: once the gateway is back, the next
// request is the probe and is served. (The probe used to stay reserved for
// good, and every later request of every caller was answered as an outage
// until the process restarted.)
func TestRecoveredProbePanicLeavesTheServiceServing(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	rt := &panicSwitch{next: gw.Client().Transport}
	// A cool-down of 1 ns: the call after the one that opens the breaker is
	// its probe, without waiting.
	c := newPep(t, gw, "shop", "orders-api", pep.WithHTTPClient(&http.Client{Transport: rt}),
		pep.WithRetry(0, 0, 0), pep.WithCache(0, 0, 0), pep.WithBreaker(1, time.Nanosecond))
	h := middleware.Require(c, "orders", "read")(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	token := gw.Token("shop", "ann")
	serve := func() int {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/orders/1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	require.Equal(t, http.StatusNoContent, serve(), "ann reads orders")

	gw.Stop()
	require.Equal(t, http.StatusForbidden, serve(), "the gateway is down: the breaker opens")
	rt.armed.Store(true)
	for i := 0; i < 100 && rt.panicked.Load() == 0; i++ { // the probe, once the clock has moved 1 ns
		require.Equal(t, http.StatusForbidden, serve(), "the panic is recovered and refused")
	}
	require.EqualValues(t, 1, rt.panicked.Load(), "the probe panicked")
	rt.armed.Store(false)

	gw.Restart()
	require.Equal(t, http.StatusNoContent, serve(), "the gateway is back: the next request is the probe, and is served")
	require.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
}
