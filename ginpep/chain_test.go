package ginpep_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/ginpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

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
	ann, ben := "Bearer "+env.Tokens["ann"], "Bearer "+env.Tokens["ben"]
	adaptertest.RunChain(t, r, []adaptertest.ChainCase{
		{Name: "granted: the chain goes on and sees the decision", Path: "/orders/42", Auth: ann, Status: 200, Body: "order 42 GRANT"},
		{Name: "denied: the chain stops", Path: "/orders/42", Auth: ben, Status: 403},
		{Name: "no token: the chain stops", Path: "/orders/42", Status: 401},
		{Name: "a path not in canonical form is the middleware's 400", Path: "/orders/files/a/../b", Auth: ann, Status: 400},
		{Name: "a method override is the middleware's 400", Path: "/orders/42", Auth: ann, Header: []string{"X-HTTP-Method-Override", "DELETE"}, Status: 400},
	})
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
	adaptertest.RunMistakes(t, []adaptertest.Mistake{
		{Name: "Wrap(nil)", Build: func() { ginpep.Wrap(nil) }, Says: "not nil"},
		{Name: "a nil checker", Build: func() { ginpep.Require(nilClient, "orders", "read") }, Says: "the Checker is nil"},
		{Name: "no scope", Build: func() { ginpep.Require(adaptertest.Granter{}, "orders") }, Says: "at least one scope"},
		{Name: "a nil function", Build: func() { ginpep.RequireFunc(adaptertest.Granter{}, nil) }, Says: "not nil"},
		{Name: "a nil option", Build: func() {
			ginpep.RequireFunc(adaptertest.Granter{}, func(*gin.Context) (string, []string) { return "", nil }, nil)
		}, Says: "an Option is nil"},
	})
}
