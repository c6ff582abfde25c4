package pep_test

// The stand-in gateway: a loopback server whose every request is answered
// by a handler of the test. It is for the faults no real gateway makes on
// demand and that need no real answer (a request held open, a body that
// never ends, a redirect elsewhere). Every other test runs against the
// reference server (reference_test.go), with a hook in front of it when a
// fault is needed.

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

const (
	// Opaque tokens the stand-in takes without looking.
	aliceToken = "alice-token.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
	bobToken   = "bob-token.eyJzdWIiOiJib2IifQ.c2lnbmF0dXJl"
	faultToken = "fault-token.eyJzdWIiOiJmYXVsdCJ9.c2lnbmF0dXJl"
	// faultGrant grants orders/read, the pair the stand-in's tests ask.
	faultGrant = `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`
)

// faultGateway is the stand-in. closing is closed before the server shuts
// down, so that handlers holding a request open let go of it.
type faultGateway struct {
	*httptest.Server
	closing  chan struct{}
	requests atomic.Int64
}

func newFaultGateway(t *testing.T, h func(g *faultGateway, w http.ResponseWriter, r *http.Request)) *faultGateway {
	t.Helper()
	g := &faultGateway{closing: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		h(g, w, r)
	}))
	t.Cleanup(g.Close)
	t.Cleanup(func() { close(g.closing) }) // runs first
	return g
}

// hold blocks until the client gives up on r or the test ends.
func (g *faultGateway) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-g.closing:
	}
}

// faultAnswer writes status, content type and body.
func faultAnswer(w http.ResponseWriter, status int, contentType, body string) {
	if contentType != "" {
		w.Header().Set("Content-Type", contentType)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func faultOK(w http.ResponseWriter) { faultAnswer(w, http.StatusOK, "application/json", faultGrant) }

// wantUnavailable checks the Cause of a transport failure or timeout.
func wantUnavailable(also ...error) func(*testing.T, error) {
	return func(t *testing.T, cause error) {
		t.Helper()
		require.ErrorIs(t, cause, pep.ErrUnavailable)
		assert.NotErrorIs(t, cause, pep.ErrCircuitOpen)
		for _, e := range also {
			require.ErrorIs(t, cause, e)
		}
		var re *pep.ResponseError
		assert.False(t, errors.As(cause, &re), "a transport failure is not a gateway answer: %v", cause)
	}
}

// wantAnswer checks the Cause of an unusable gateway answer.
func wantAnswer(status int, also ...error) func(*testing.T, error) {
	return func(t *testing.T, cause error) {
		t.Helper()
		var re *pep.ResponseError
		require.ErrorAs(t, cause, &re)
		assert.Equal(t, status, re.StatusCode)
		assert.Equal(t, status >= 500, errors.Is(cause, pep.ErrUnavailable))
		for _, e := range also {
			require.ErrorIs(t, cause, e)
		}
	}
}

// redirectTarget is a second server a gateway redirects to; it would grant
// everything, and records what reached it.
type redirectTarget struct {
	*httptest.Server
	mu             sync.Mutex
	requests       int
	authorizations []string
}

func newRedirectTarget(t *testing.T) *redirectTarget {
	t.Helper()
	rt := &redirectTarget{}
	rt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt.mu.Lock()
		rt.requests++
		if a := r.Header.Get("Authorization"); a != "" {
			rt.authorizations = append(rt.authorizations, a)
		}
		rt.mu.Unlock()
		faultOK(w)
	}))
	t.Cleanup(rt.Close)
	return rt
}
