package middleware_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
)

// trustedGuard is Require with _method trusted and a 503 for a request out
// of time.
func trustedGuard() http.Handler {
	return middleware.Require(&fakeChecker{grant: true}, "orders", "read").With(
		middleware.WithMethodOverride("_method"), middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second)))(reached)
}

// TestALateTrustedBodyReadClosesItsConnection: a request whose context
// ends while its trusted form body is read gets the unavailable answer and
// its HTTP/1.1 connection is not used again: the read deadline set on it
// may already have ended net/http's own read of the next request, and the
// connection's context with it, so every later request on the connection
// started done (a-last10c F1: the next, legitimate requests got 503).
func TestALateTrustedBodyReadClosesItsConnection(t *testing.T) {
	t.Parallel()
	guard := trustedGuard()
	srv := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		r = r.WithContext(ctx)
		// The body arrives whole; the request's time ends at its end.
		r.Body = &cancelAtEOF{ReadCloser: r.Body, cancel: cancel}
		guard.ServeHTTP(w, r)
	}))
	conn := testkit.Must(net.Dial("tcp", srv.Listener.Addr().String()))(t)
	t.Cleanup(func() { _ = conn.Close() })
	body := "_method=DELETE&x=1"
	testkit.Must(fmt.Fprintf(conn, "POST /orders/42 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-real-token-at-all\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", len(body), body))(t)
	resp := testkit.Must(http.ReadResponse(bufio.NewReader(conn), nil))(t)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, string(b))
	require.True(t, resp.Close, "the connection whose read deadline was set is kept for the next request")
}

// cancelAtEOF ends its request's context when the body it wraps ends.
type cancelAtEOF struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelAtEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.cancel()
	}
	return n, err
}

// deadlinePanicWriter is a user's ResponseWriter wrapper whose own
// SetReadDeadline panics.
type deadlinePanicWriter struct{ http.ResponseWriter }

func (w *deadlinePanicWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
func (*deadlinePanicWriter) SetReadDeadline(time.Time) error {
	panic("the user's SetReadDeadline")
}

// TestAPanickingSetReadDeadlineEndsOnlyItsRequest: the writer chain's
// SetReadDeadline, run when a trusted body read outlives the request's
// context, is user code on a goroutine of the library's: its panic is
// recovered, and the request gets the unavailable answer (a-last10c F3: it
// ended the process; README rule 12). In a child process, so that a crash
// is seen.
func TestAPanickingSetReadDeadlineEndsOnlyItsRequest(t *testing.T) {
	if os.Getenv("ORGAUTHZ_DEADLINE_PANIC_CHILD") == "1" {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders/42", nil)
		r.Body = &adaptertest.StallingBody{ReadCloser: io.NopCloser(strings.NewReader("_method=DELETE&x=")), Cancel: cancel}
		r.Header.Set("Authorization", "Bearer not-a-real-token-at-all")
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		trustedGuard().ServeHTTP(&deadlinePanicWriter{rec}, r)
		fmt.Println("status", rec.Code)
		return
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAPanickingSetReadDeadlineEndsOnlyItsRequest$")
	cmd.Env = append(os.Environ(), "ORGAUTHZ_DEADLINE_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the process ended on a panic of the user's SetReadDeadline:\n%s", out)
	require.Contains(t, string(out), "status 503")
}
