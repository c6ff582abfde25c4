package ginpep_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/ginpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/middleware"
)

// A resource function that panics (the user's bug) costs only its
// request, which gets the middleware's 403 even on an engine without gin's
// Recovery middleware, and the handler does not run.
func TestPanickingResourceFunctionIsDenied(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	var ran bool
	r := gin.New() // no Recovery
	r.GET("/orders/:op", ginpep.RequireFunc(env.Client, func(*gin.Context) (string, []string) {
		var scopes []string
		return "orders", scopes[:1] // a user's bug: out of range
	}, middleware.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))), func(*gin.Context) { ran = true })
	status, body := adaptertest.GetAs(t, r, "/orders/read", env.Tokens["ann"])
	assert.Equal(t, http.StatusForbidden, status)
	adaptertest.CheckErrorBody(t, status, body)
	assert.False(t, ran)
}
