package redisstore_test

// A purge fences the flights as well as the cache writers of the requests
// in flight: a Check that begins after the purge reached this replica
// never joins an identical request sent before it. (Found by the attack of
// issue 24: such a Check shared the GRANT the gateway decided before the
// revocation, for as long as that request was joinable.)

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// slowAnswers is a transport whose requests reach the gateway at once (it
// decides then) while the answers, once armed, wait for release: a slow
// network or a gateway slow to write its answer.
type slowAnswers struct {
	base    http.RoundTripper
	mu      sync.Mutex
	armed   bool
	release chan struct{}
	sent    chan struct{}
}

func (s *slowAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(r)
	s.mu.Lock()
	armed := s.armed
	s.armed = false
	s.mu.Unlock()
	if err != nil || !armed {
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	s.sent <- struct{}{} // the gateway has decided
	<-s.release
	return resp, nil
}

// TestCheckAfterAPurgeFromAnotherReplicaJoinsNoEarlierFlight: replicas A and B on
// one Redis; B's answers are slow (held until the late Check returns, or
// for 4 s, within a 10 s WithTimeout). A Check
// on B is in flight when the token is revoked and Purged on A; once B has
// applied the purge, a new Check on B, begun after all that, is denied: it
// sent a request of its own.
func TestCheckAfterAPurgeFromAnotherReplicaJoinsNoEarlierFlight(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	gw := startGateway(t)
	slow := &slowAnswers{base: gw.Client().Transport, release: make(chan struct{}), sent: make(chan struct{}, 1)}
	a := replica(t, gw, rs.Client(), "attack:flight")
	b := replica(t, gw, rs.Client(), "attack:flight", pep.WithHTTPClient(&http.Client{Transport: slow}), pep.WithTimeout(10*time.Second))
	waitFor(t, "both replicas trust their caches", 10*time.Second, trusted(a, b))

	tok := revocable(gw, "bob")
	slow.mu.Lock()
	slow.armed = true
	slow.mu.Unlock()
	leader := make(chan pep.Decision, 1)
	go func() {
		d, _ := b.Check(pep.WithToken(context.Background(), tok), "orders", "read")
		leader <- d
	}()
	<-slow.sent // the gateway granted; the answer is on its way

	gw.Revoke(t, realm, app, secret, tok)
	require.NoError(t, a.Purge(t.Context(), tok))
	waitFor(t, "B applied the purge", 5*time.Second, func() bool { return b.Stats().Invalidations > 0 })
	purged := time.Now()

	late := make(chan pep.Decision, 1)
	go func() { // begins after the revocation and after B applied the purge
		d, _ := b.Check(pep.WithToken(context.Background(), tok), "orders", "read")
		late <- d
	}()
	// The earlier answer is held until the late Check has returned, which
	// one that sends a request of its own does at once (its request is not
	// held), or for 4 s, past the 2 s bound: one that joined the earlier
	// flight waits for its answer, the GRANT, which comes only then.
	var d pep.Decision
	select {
	case d = <-late:
		close(slow.release)
	case <-time.After(4 * time.Second):
		close(slow.release)
		d = <-late
	}
	<-leader
	t.Logf("a Check begun after B applied the purge returned %v (Cached=%v, Coalesced=%d) %v after it",
		d.Status, d.Cached, b.Stats().Coalesced, time.Since(purged).Round(time.Millisecond))
	require.False(t, d.Allowed(), "a Check begun after the token was revoked and purged everywhere was GRANTed by a flight sent before")
}
