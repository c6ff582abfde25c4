package middleware_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// warnPanics is a user's slog handler with a bug on its Warn and Error
// path.
type warnPanics struct{}

func (warnPanics) Enabled(context.Context, slog.Level) bool { return true }
func (h warnPanics) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h warnPanics) WithGroup(string) slog.Handler          { return h }
func (warnPanics) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		panic("a bug in the user's log handler")
	}
	return nil
}

// The middleware's answer to a panic under its Checker does not depend on
// the user's logger: one slog handler with a bug on its Error path, shared
// by the client (which logs its fail-closed outage at Warn and panics
// there) and the middleware (which logs the recovered panic), still gets
// the request its denied answer (403), and nothing leaves the middleware.
// (The middleware's log line used to panic again, outside any recover:
// net/http dropped the connection, and a router without recovery ended the
// process.)
func TestMiddlewareRecoverDoesNotDependOnTheLogger(t *testing.T) {
	t.Parallel()
	logger := slog.New(warnPanics{})
	down, err := hangguard.NewPep("http://127.0.0.1:1", adaptertest.Realm, adaptertest.ClientID,
		pep.WithRetry(0, time.Millisecond, time.Millisecond), pep.WithLogger(logger))
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	ran := false
	h := middleware.RequireFunc(down, func(*http.Request) (string, []string) { return "orders", []string{"read"} },
		middleware.WithLogger(logger))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ran = true
		w.WriteHeader(http.StatusOK)
	}))
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/orders/7", nil)
	r.Header.Set("Authorization", "Bearer abc.def.ghi")
	w := httptest.NewRecorder()
	require.NotPanics(t, func() { h.ServeHTTP(w, r) }, "a panic left the middleware")
	require.Equal(t, http.StatusForbidden, w.Code)
	require.False(t, ran, "the handler never runs")
}
