package gatewaytest_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// A stand-in counts requests, records their credentials, and still hands
// the handler the body it read first.
func TestStartRecordsWhatReachedIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []gatewaytest.Option
	}{
		{"http", []gatewaytest.Option{gatewaytest.WithAuthorizations()}},
		{"https", []gatewaytest.Option{gatewaytest.WithAuthorizations(), gatewaytest.WithTLS()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				gatewaytest.Answer(http.StatusTeapot, "text/plain", "got "+string(b))(w, r)
			}, tc.opts...)
			assert.True(t, strings.HasPrefix(s.URL, tc.name+"://127.0.0.1:"), s.URL)
			for _, auth := range []string{"Bearer one", ""} {
				req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL, strings.NewReader("hello")))(t)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp := testkit.Must(s.Client().Do(req))(t)
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				assert.Equal(t, http.StatusTeapot, resp.StatusCode)
				assert.Equal(t, "text/plain", resp.Header.Get("Content-Type"))
				assert.Equal(t, "got hello", string(b))
			}
			assert.EqualValues(t, 2, s.Requests())
			assert.Equal(t, [][]string{{"Bearer one"}, nil}, s.Authorizations())
		})
	}
}

// A held request is let go when the test ends: Close returns, and the
// client sees the connection end.
func TestHoldEndsWithTheServer(t *testing.T) {
	t.Parallel()
	held := make(chan struct{})
	s := gatewaytest.Start(t, func(_ http.ResponseWriter, r *http.Request) {
		close(held)
		gatewaytest.Hold(r)
	})
	errs := make(chan error, 1)
	go func() {
		resp, err := s.Client().Get(s.URL)
		if err == nil {
			_ = resp.Body.Close()
		}
		errs <- err
	}()
	<-held
	s.Close()
	require.Error(t, <-errs, "a held request got an answer")
}

// Raw writes bytes no ResponseWriter would.
func TestRawWritesTheConnection(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Raw("HTTP/1.1 2x0 nonsense\r\n\r\n"))
	conn := testkit.Must(net.Dial("tcp", s.Addr))(t)
	defer conn.Close()
	testkit.Must(io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"))(t)
	line := testkit.Must(bufio.NewReader(conn).ReadString('\n'))(t)
	assert.Equal(t, "HTTP/1.1 2x0 nonsense\r\n", line)
}

// A stopped server refuses connections; restarted, it serves the same
// handler on the same address.
func TestStopAndRestartKeepTheAddress(t *testing.T) {
	t.Parallel()
	s, ln := gatewaytest.Listen(t)
	s.Serve(ln, gatewaytest.Answer(http.StatusOK, "", "up"))
	get := func() error {
		resp, err := s.Client().Get(s.URL)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	require.NoError(t, get())
	require.NoError(t, s.Stop(t.Context()))
	s.Client().CloseIdleConnections()
	require.Error(t, get(), "a stopped server answered")
	require.NoError(t, s.Restart())
	require.NoError(t, get())
	require.Error(t, s.Restart(), "a running server restarted")
}
