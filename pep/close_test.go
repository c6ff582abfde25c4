package pep_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/leakcheck"
	"github.com/orgauthz/orgauthz/pep"
)

// TestCloseReleasesConnections: a client on its default transport keeps
// idle keep-alive connections (and their goroutines) to a gateway that is
// still up; Close closes them, so that a user's goleak check passes while
// the gateway runs on. Not parallel: the leak check looks at every goroutine.
func TestCloseReleasesConnections(t *testing.T) {
	g := startReference(t)
	before := leakcheck.Current()
	c := mustPep(t, g.URL, testRealm, bulkClient, pep.WithBatchSize(5), pep.WithCache(0, 0, 0))
	c.SetToken(g.token(t, "alice"))
	// 20 pairs in 4 requests at once: several connections.
	res := checkedMany(t, c, t.Context(), []pep.Resource{{Name: "reports", Scopes: bulkScopes(20)}})
	require.True(t, res.Allowed())

	require.NoError(t, c.Close())
	leakcheck.VerifyNone(t, before)
}

// TestCloseDuringACall: a call under way when Close runs finishes, its
// retry dialling a connection after Close; once it has, no connection and
// no goroutine is left. Not parallel: the leak check looks at every goroutine.
func TestCloseDuringACall(t *testing.T) {
	g := startReference(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	g.setHook(func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n != 1 {
			return false
		}
		close(arrived)
		select {
		case <-release:
		case <-g.closing:
		}
		w.Header().Set("Connection", "close") // the retry needs a new connection
		writeError(w, http.StatusServiceUnavailable, "busy")
		return true
	})
	before := leakcheck.Current()
	c := mustPep(t, g.URL, testRealm, testClient, fastRetry)
	c.SetToken(g.token(t, "alice"))
	done := make(chan pep.Decision)
	go func() {
		d, err := c.Check(t.Context(), "orders", "read")
		assert.NoError(t, err)
		done <- d
	}()
	<-arrived
	require.NoError(t, c.Close())
	close(release)
	d := <-done
	requireGatewayDecision(t, d, pep.Grant) // the call under way finished as it would have
	leakcheck.VerifyNone(t, before)
}

// TestCallsAfterCloseFail: every call after Close, a cached answer
// included, Purge and PurgeAll too, fails with ErrClosed and DENY, and
// sends and publishes nothing.
func TestCallsAfterCloseFail(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	b := newLongBus()
	c := b.client(t, g)
	b.Beat(time.Now())
	c.SetToken(g.token(t, "alice"))
	d := checked(t, c, "orders", "read")
	require.True(t, d.Allowed())
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "closing twice is harmless")
	sent := g.count()

	tests := []struct {
		name string
		call func() error
	}{
		{"Check of a cached pair", func() error {
			d, err := c.Check(t.Context(), "orders", "read")
			assert.False(t, d.Allowed())
			assert.ErrorIs(t, d.Cause, pep.ErrClosed)
			return err
		}},
		{"Check with a per-call token", func() error {
			d, err := c.Check(pep.WithToken(t.Context(), g.token(t, "bob")), "orders", "read")
			assert.False(t, d.Allowed())
			return err
		}},
		{"CheckMany", func() error {
			res, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read"}}})
			assert.False(t, res.Allowed())
			return err
		}},
		{"ListGranted", func() error {
			perms, err := c.ListGranted(t.Context(), nil)
			assert.Empty(t, perms)
			return err
		}},
		{"Organizations", func() error { _, err := c.Organizations(t.Context()); return err }},
		{"Verify", func() error { return c.Verify(t.Context()) }},
		{"Purge", func() error { return c.Purge(t.Context(), "some-token") }},
		{"PurgeAll", func() error { return c.PurgeAll(t.Context()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.ErrorIs(t, err, pep.ErrClosed)
			assert.NotErrorIs(t, err, pep.ErrNoToken)
			assert.Contains(t, err.Error(), "Close", "the error says what happened")
		})
	}
	assert.Equal(t, sent, g.count(), "nothing is sent after Close")
	assert.Empty(t, b.Published(), "a closed client published")
}

// idleRecorder is a caller's transport that records whether its idle
// connections were closed.
type idleRecorder struct {
	http.RoundTripper
	closed atomic.Bool
}

func (r *idleRecorder) CloseIdleConnections() { r.closed.Store(true) }

// TestCloseLeavesTheCallersTransport: a transport given with
// WithHTTPClient is the caller's; Close does not close its connections.
func TestCloseLeavesTheCallersTransport(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	rt := &idleRecorder{RoundTripper: g.Client().Transport}
	c := mustPep(t, g.URL, testRealm, testClient, pep.WithHTTPClient(&http.Client{Transport: rt}))
	c.SetToken(g.token(t, "alice"))
	checked(t, c, "orders", "read")
	require.NoError(t, c.Close())
	assert.False(t, rt.closed.Load())
	_, err := c.Check(t.Context(), "orders", "read")
	require.ErrorIs(t, err, pep.ErrClosed)
}
