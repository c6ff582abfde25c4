package faults_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// TestGatewayRestart stops the reference server in the middle of a run and
// starts it again on the same address. The clients (Bearer and DPoP, each
// calling Check, CheckMany and Organizations in turn, every other call
// past the cache) are never rebuilt: every answer they give, during the gap
// too, is the reference's or a fail-closed DENY with a Cause matching
// ErrUnavailable (a cached answer given during the gap is the gateway's own
// and fine), and after the restart each one gets a clean answer from the
// gateway again and its breaker closes.
//
// The callers' calls are bounded by restartCallTimeout, a hang guard: what
// fails them in the gap is the refused connection, at once, and a short
// deadline (callTimeout, as the test had) failed a clean call before the
// restart beside a CPU hog, which the test then took for the gateway's.
func TestGatewayRestart(t *testing.T) {
	gw, ln := gatewaytest.Listen(t)
	srv, err := mockserver.New(mockserver.WithFixture(fixture), mockserver.WithIssuer(gw.URL), es256Tokens)
	require.NoError(t, err)
	gw.Serve(ln, srv)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	r := &rig{srv: srv, url: gw.URL, hc: &http.Client{Transport: tr}}
	ctx := t.Context()

	// restarts counts completed restarts; down is set while the gateway
	// is stopped.
	var (
		restarts atomic.Int64
		down     atomic.Bool
		stop     = make(chan struct{})
	)
	type caller struct {
		kind      string
		c         *pep.Client
		refs      []answer // per call
		calls     atomic.Int64
		failed    atomic.Int64 // calls failed closed
		inGap     atomic.Int64 // calls made while the gateway was down
		recovered atomic.Bool  // a clean gateway answer after the restart
	}
	var callers []*caller
	for _, kind := range tokenKinds {
		cr := &caller{kind: kind}
		for _, cl := range calls {
			rc, err := r.client(kind, pep.WithTimeout(10*time.Second))
			require.NoError(t, err)
			ref := cl.do(ctx, rc)
			require.NoError(t, ref.err)
			cr.refs = append(cr.refs, ref)
		}
		cr.c, err = r.client(kind, pep.WithTimeout(restartCallTimeout))
		require.NoError(t, err)
		callers = append(callers, cr)
	}

	var wg sync.WaitGroup
	for _, cr := range callers {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := n % len(calls)
				var opts []pep.CallOption
				if n%2 == 1 {
					opts = append(opts, pep.NoCache())
				}
				restarted, wasDown := restarts.Load(), down.Load()
				callCtx, cancel := context.WithTimeout(ctx, restartCallTimeout)
				a := calls[i].do(callCtx, cr.c, opts...)
				cancel()
				cr.calls.Add(1)
				if wasDown {
					cr.inGap.Add(1)
				}
				outcome, bad := verdict(cr.refs[i], a)
				assert.Empty(t, bad, "%s %s (restarts %d, down %v)", cr.kind, calls[i].name, restarted, wasDown)
				if outcome != "answered" {
					cr.failed.Add(1)
					continue
				}
				fromGateway := a.decisions == nil
				for _, d := range a.decisions {
					fromGateway = fromGateway || !d.Cached
				}
				if restarted > 0 && fromGateway {
					cr.recovered.Store(true)
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	everyone := func(f func(*caller) bool) func() bool {
		return func() bool {
			for _, cr := range callers {
				if !f(cr) {
					return false
				}
			}
			return true
		}
	}

	// A clean run first, then the gateway goes down until every caller
	// has failed closed at least once, then comes back on the same address.
	require.Eventually(t, everyone(func(cr *caller) bool { return cr.calls.Load() >= 6 }), 10*time.Second, 2*time.Millisecond, "the callers run")
	for _, cr := range callers {
		require.Zero(t, cr.failed.Load(), "%s: nothing fails before the restart", cr.kind)
	}
	down.Store(true)
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	require.NoError(t, gw.Stop(stopCtx))
	cancel()
	gapStart := time.Now()
	assert.Eventually(t, everyone(func(cr *caller) bool { return cr.failed.Load() > 0 }), 10*time.Second, 2*time.Millisecond, "every caller felt the gap")
	require.NoError(t, gw.Restart())
	gap := time.Since(gapStart)
	down.Store(false)
	restarts.Store(1)

	require.Eventually(t, everyone(func(cr *caller) bool { return cr.recovered.Load() }), 10*time.Second, 2*time.Millisecond,
		"every caller gets a clean answer from the gateway again, without being rebuilt")
	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // for the deferred close
	for _, cr := range callers {
		st := cr.c.Stats()
		assert.Equal(t, pep.BreakerClosed, st.Breaker, "%s: the breaker closed again", cr.kind)
		t.Logf("%s: %d calls, %d made while the gateway was down, %d failed closed (ErrUnavailable), 0 false GRANTs; "+
			"%d gateway requests, %d retries, breaker %v", cr.kind, cr.calls.Load(), cr.inGap.Load(), cr.failed.Load(),
			st.GatewayRequests, st.Retries, st.Breaker)
	}
	t.Logf("the gateway was down for %v", gap.Round(time.Millisecond))
}
