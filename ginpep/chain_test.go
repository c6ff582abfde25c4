package ginpep_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/ginpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// get sends GET path with the given authorization (none when empty) and
// extra headers, and returns the status, the body and the X-Trace header.
func get(t *testing.T, srv *httptest.Server, path, auth string, header ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header.Get("X-Trace")
}

// A guard in a gin chain: the handlers before it run in any case, those
// after it only when it lets the request through, and they see the
// decision; a group guarded by Require guards each of its routes.
func TestChain(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	r := gin.New()
	r.Use(func(c *gin.Context) {
		c.Header("X-Trace", "outer")
		c.Next()
	})
	orders := r.Group("/orders", ginpep.Require(env.Client, "orders", "read"))
	after := func(c *gin.Context) {
		res, ok := ginpep.Decision(c)
		if !ok || !res.Allowed() {
			c.AbortWithStatus(http.StatusTeapot)
			return
		}
		c.Set("seen", res.Status.String())
	}
	orders.GET("/:id", after, func(c *gin.Context) { c.String(http.StatusOK, "order "+c.Param("id")+" "+c.GetString("seen")) })
	orders.GET("/files/*path", func(c *gin.Context) { c.String(http.StatusOK, "file") })
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	ann, ben := "Bearer "+env.Tokens["ann"], "Bearer "+env.Tokens["ben"]

	tests := []struct {
		name   string
		path   string
		auth   string
		header []string
		status int
		body   string
	}{
		{"granted: the chain goes on and sees the decision", "/orders/42", ann, nil, 200, "order 42 GRANT"},
		{"denied: the chain stops", "/orders/42", ben, nil, 403, ""},
		{"no token: the chain stops", "/orders/42", "", nil, 401, ""},
		{"a path not in canonical form is the middleware's 400", "/orders/files/a/../b", ann, nil, 400, ""},
		{"a method override is the middleware's 400", "/orders/42", ann, []string{"X-HTTP-Method-Override", "DELETE"}, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body, trace := get(t, srv, tt.path, tt.auth, tt.header...)
			assert.Equal(t, tt.status, status, body)
			assert.Equal(t, "outer", trace, "the handlers before the guard ran")
			if tt.status == http.StatusOK {
				assert.Equal(t, tt.body, body)
				return
			}
			adaptertest.CheckErrorBody(t, status, []byte(body))
		})
	}
}

// RequireFunc's function sees the method the guard checks, and the gin
// context's own request is back as it was afterwards.
func TestRequireFuncSeesTheCheckedMethod(t *testing.T) {
	t.Parallel()
	fc := adaptertest.Granter{}
	var seen string
	r := gin.New()
	r.POST("/orders", ginpep.RequireFunc(fc, func(c *gin.Context) (string, []string) {
		seen = c.Request.Method
		return "orders", []string{"delete"}
	}, middleware.WithMethodOverride("X-HTTP-Method-Override")), func(c *gin.Context) {
		c.String(http.StatusOK, c.Request.Method)
	})
	status, body := adaptertest.PostOverridden(t, r)
	assert.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "DELETE", seen)
}

// Wiring mistakes panic when the handler is built, saying what to fix.
func TestWiringMistakesPanic(t *testing.T) {
	t.Parallel()
	var nilClient *pep.Client
	tests := []struct {
		name  string
		build func()
		says  string
	}{
		{"Wrap(nil)", func() { ginpep.Wrap(nil) }, "not nil"},
		{"a nil checker", func() { ginpep.Require(nilClient, "orders", "read") }, "the Checker is nil"},
		{"no scope", func() { ginpep.Require(adaptertest.Granter{}, "orders") }, "at least one scope"},
		{"a nil function", func() { ginpep.RequireFunc(adaptertest.Granter{}, nil) }, "not nil"},
		{"a nil option", func() {
			ginpep.RequireFunc(adaptertest.Granter{}, func(*gin.Context) (string, []string) { return "", nil }, nil)
		}, "an Option is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				assert.Contains(t, r, tt.says)
			}()
			tt.build()
		})
	}
}
