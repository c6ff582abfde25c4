package pep

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCannotEnd(t *testing.T) {
	t.Parallel()
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	expiring, cancelTimeout := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancelTimeout()
	type key struct{}
	tests := []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"Background", context.Background(), true},
		{"TODO", context.TODO(), true},
		{"a value on Background", context.WithValue(context.Background(), key{}, 1), true},
		{"WithoutCancel", context.WithoutCancel(cancellable), true},
		{"cancellable", cancellable, false},
		{"a value on a cancellable one", context.WithValue(cancellable, key{}, 1), false},
		{"with a deadline", expiring, false},
		{"the test's", t.Context(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, cannotEnd(tt.ctx))
		})
	}
}

// TestPatientCallersWhileARequestIsHeld runs callers whose context cannot
// end (they wait in singleflight's Do) while the gateway holds the first
// request, together with one that can (it waits in DoChan). When each
// caller joins is not observable from outside, so the test checks what
// holds whatever the order: every caller gets the gateway's answer, and
// every call either sent a request or shared one.
func TestPatientCallersWhileARequestIsHeld(t *testing.T) {
	t.Parallel()
	const patient = 8
	var requests atomic.Int64
	arrived, release := make(chan struct{}), make(chan struct{})
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if requests.Add(1) == 1 {
			close(arrived)
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`)
	}))
	t.Cleanup(gw.Close)
	c, err := New(gw.URL, "acme", "orders-api", WithHTTPClient(gw.Client()), WithCache(0, 0, 0))
	require.NoError(t, err)
	c.SetToken("a-token")

	var wg sync.WaitGroup
	check := func(ctx context.Context) {
		wg.Go(func() {
			d, err := c.Check(ctx, "orders", "read")
			assert.NoError(t, err)
			assert.True(t, d.Allowed(), "%+v", d)
		})
	}
	check(context.Background())
	<-arrived // the first request is held at the gateway
	for range patient - 1 {
		check(context.Background())
	}
	check(t.Context())
	close(release)
	wg.Wait()

	s := c.Stats()
	assert.Equal(t, uint64(requests.Load()), s.GatewayRequests)
	assert.Equal(t, uint64(patient+1), s.GatewayRequests+s.Coalesced, "each call sent a request or shared one")
	assert.Zero(t, s.FailClosed)
}
