package ginpep_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/orgauthz/orgauthz/ginpep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/middleware"
)

func init() { gin.SetMode(gin.TestMode) }

// rule names the resource and scopes of a route by its pattern and the
// :op parameter, from the shared table's Operations.
func rule(c *gin.Context) (string, []string) {
	res, ok := adaptertest.Operations[c.Param("op")]
	if !ok || c.FullPath() != "/orders/:op" {
		return "", nil
	}
	return res.Name, res.Scopes
}

// service is the shared table's test service on gin's own router.
func service(_ *testing.T, c adaptertest.Checker) http.Handler {
	r := gin.New()
	r.GET("/orders/:op",
		ginpep.RequireFunc(c, rule, middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second))),
		func(c *gin.Context) {
			body := adaptertest.Ran + c.Param("op")
			if _, ok := ginpep.Decision(c); !ok {
				body += adaptertest.NoDecision
			}
			c.String(http.StatusOK, body)
		})
	return r
}

// The table every adapter shares (internal/adaptertest), over a loopback
// server with gin's router.
func TestAdapterTable(t *testing.T) {
	t.Parallel()
	adaptertest.RunHTTP(t, adaptertest.Start(t), service)
}

// TestTrustedFormBodyReadEndsWithTheRequestContext: the body read before
// the decision reaches the connection through gin's writer (a-client10b
// F3).
func TestTrustedFormBodyReadEndsWithTheRequestContext(t *testing.T) {
	t.Parallel()
	adaptertest.StalledFormBody(t, func(m middleware.Middleware) http.Handler {
		r := gin.New()
		r.POST("/orders/:id", ginpep.Wrap(m), func(c *gin.Context) { c.String(http.StatusOK, "ran") })
		return r
	})
}
