package echopep_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"

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
	status, body := adaptertest.GetAs(t, e, "/orders/read", env.Tokens["ann"])
	assert.Equal(t, http.StatusForbidden, status)
	adaptertest.CheckErrorBody(t, status, body)
	assert.False(t, ran)
}
