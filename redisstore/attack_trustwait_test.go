package redisstore_test

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// holdWrite is a RoundTripper that holds the answer to a request about
// orders/write (a slow link) until release is closed, once arrived says
// the answer came.
type holdWrite struct {
	next             http.RoundTripper
	arrived, release chan struct{}
	once             sync.Once
}

func (h *holdWrite) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := h.next.RoundTrip(r)
	if bytes.Contains(body, []byte(`"write"`)) {
		h.once.Do(func() { close(h.arrived) })
		<-h.release
	}
	return resp, err
}

// TestAttackAnswerGrantOutlivesAStalledChannel (a-client15 F1, with Redis):
// replicas A and B share a Redis invalidation channel; A's link to Redis
// goes through a proxy. A's CheckMany of bob's orders/read and
// orders/write (two chunks) reads orders/read's GRANT; its orders/write
// answer is slow. Meanwhile A's link to Redis stalls (A stops trusting its
// cache two seconds later: CacheBypassed), bob's token is revoked at the
// gateway and purged on B, whose purge A never hears. When orders/write's
// answer comes, A's CheckMany returns orders/read's GRANT read before all
// that: neither the cache A no longer trusts nor the gateway, which now
// refuses bob, vouches for it.
func TestAttackAnswerGrantOutlivesAStalledChannel(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	rs := redistest.Start(t)
	proxy := redistest.StartProxy(t, redistest.Listen(t), rs.Addr(), nil)
	rdbA := redis.NewClient(&redis.Options{Addr: proxy.Addr})
	t.Cleanup(func() { _ = rdbA.Close() })
	hold := &holdWrite{next: gw.Client().Transport, arrived: make(chan struct{}), release: make(chan struct{})}
	a := replica(t, gw, rdbA, "test:trustwait", pep.WithHTTPClient(&http.Client{Transport: hold}),
		pep.WithBatchSize(1), pep.WithTimeout(time.Minute))
	b := replica(t, gw, rs.Client(), "test:trustwait")
	waitFor(t, "both replicas trust their caches", 10*time.Second, trusted(a, b))
	bob := revocable(gw, "bob")

	type out struct {
		r   pep.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := a.CheckMany(pep.WithToken(t.Context(), bob), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
		done <- out{r, err}
	}()
	<-hold.arrived
	proxy.Set(redistest.Drop) // A's channel stalls, its connections kept open
	waitFor(t, "A stops trusting its cache", 10*time.Second, func() bool { return a.Stats().CacheBypassed })
	gw.Revoke(t, realm, app, secret, bob)
	require.NoError(t, b.Purge(t.Context(), bob))
	close(hold.release)
	o := <-done
	require.NoError(t, o.err)
	require.Len(t, o.r.Decisions, 2)
	d := o.r.Decisions[0]
	require.Equal(t, "read", d.Scope)
	assert.True(t, a.Stats().CacheBypassed)
	assert.NotEqual(t, pep.Grant, d.Status,
		"orders/read's GRANT, read before A's channel stalled and bob was revoked and purged on B, left A's CheckMany")
	_, err := a.Check(pep.WithToken(t.Context(), bob), "orders", "read")
	assert.ErrorIs(t, err, pep.ErrUnauthorized, "a Check on A now: the gateway refuses bob")
}
