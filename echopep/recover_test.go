package echopep_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/echopep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/middleware"
)

// A resource function that panics (the user's bug) costs only its
// request, which gets the middleware's 403 even on a server without echo's
// Recover middleware, and the handler does not run.
func TestPanickingResourceFunctionIsDenied(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	var ran bool
	e := echo.New() // no Recover middleware
	e.GET("/orders/:op", func(echo.Context) error {
		ran = true
		return nil
	}, echopep.RequireFunc(env.Client, func(echo.Context) (string, []string) {
		var scopes []string
		return "orders", scopes[:1] // a user's bug: out of range
	}, middleware.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/orders/read", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+env.Tokens["ann"])
	res, err := srv.Client().Do(req)
	require.NoError(t, err, "the request got no answer")
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	adaptertest.CheckErrorBody(t, res.StatusCode, body)
	assert.False(t, ran)
}
