package ginpep_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	srv := httptest.NewServer(r)
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
