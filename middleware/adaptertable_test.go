package middleware_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/middleware"
)

// The table every framework adapter shares (internal/adaptertest), first
// on the middleware itself over a loopback server: the adapters must
// answer it as the middleware does.
func TestAdapterTable(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	adaptertest.RunHTTP(t, env, func(_ *testing.T, c adaptertest.Checker) http.Handler {
		byPath := func(r *http.Request) (string, []string) {
			res, ok := adaptertest.Operations[strings.TrimPrefix(r.URL.Path, "/orders/")]
			if !ok {
				return "", nil
			}
			return res.Name, res.Scopes
		}
		mw := middleware.RequireFunc(c, byPath,
			middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second)))
		mux := http.NewServeMux()
		mux.Handle("GET /orders/{op}", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := adaptertest.Ran + r.PathValue("op")
			if _, ok := middleware.DecisionFromContext(r.Context()); !ok {
				body += adaptertest.NoDecision
			}
			_, _ = io.WriteString(w, body)
		})))
		return mux
	})
}
