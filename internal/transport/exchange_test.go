package transport

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// quietObserver records nothing.
type quietObserver struct{}

func (quietObserver) StartRequest(ctx context.Context, _, _ string) (context.Context, trace.Span) {
	return ctx, trace.SpanFromContext(ctx)
}
func (quietObserver) ActiveAdd(context.Context, int64) {}
func (quietObserver) EndRequest(context.Context, trace.Span, time.Time, int, int, error) {
}

// stampCredential adds a header of its own to the first attempt it
// authorizes only.
type stampCredential struct{ n atomic.Int32 }

func (c *stampCredential) Ident() Ident  { return Ident{Scheme: SchemeBearer, Token: "a-token"} }
func (c *stampCredential) Usable() error { return nil }
func (c *stampCredential) Authorize(r *http.Request, _ string) error {
	r.Header["Authorization"] = []string{"Bearer a-token"}
	if c.n.Add(1) == 1 {
		r.Header["X-First-Only"] = []string{"1"}
	}
	return nil
}

// Requests to one URL share its parsed request; what one request adds to
// its headers (a caller's header, the credential's) must never reach the
// next one.
func TestPostsShareNothingTheyAdd(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen []http.Header
	)
	srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		gatewaytest.Answer(http.StatusOK, "", `{}`)(w, r)
	})
	x := newTestExchanger(srv)
	cred := &stampCredential{}

	headers := []http.Header{nil, {"X-Request-Id": {"second"}}, nil}
	for _, h := range headers {
		data, err := x.Post(t.Context(), cred, srv.URL+"/decide", []byte(`{"a":1}`), h, true, nil)
		require.NoError(t, err)
		assert.Equal(t, `{}`, string(data))
	}

	require.Len(t, seen, len(headers))
	assert.Equal(t, "1", seen[0].Get("X-First-Only"))
	assert.Equal(t, "second", seen[1].Get("X-Request-Id"))
	for i, h := range seen {
		assert.Equal(t, "application/json", h.Get("Content-Type"), "request %d", i)
		assert.Equal(t, "application/json", h.Get("Accept"), "request %d", i)
		assert.Equal(t, "Bearer a-token", h.Get("Authorization"), "request %d", i)
		if i > 0 {
			assert.Empty(t, h.Values("X-First-Only"), "request %d", i)
		}
		if i != 1 {
			assert.Empty(t, h.Values("X-Request-Id"), "request %d", i)
		}
	}
}
