package frameworks_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
)

// chiOrders is the README's chi example: a route group guarded by
// Require, and a route whose resource and scope come from its URL
// parameters through RequireFunc.
func chiOrders(client middleware.Checker) http.Handler {
	r := chi.NewRouter()
	r.Route("/orders", func(r chi.Router) {
		r.Use(middleware.Require(client, "orders", "read"))
		r.Get("/{id}", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "order "+chi.URLParam(r, "id"))
		})
	})
	r.With(middleware.RequireFunc(client, func(r *http.Request) (string, []string) {
		return "orders", []string{chi.URLParam(r, "scope")}
	})).Get("/can/{scope}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "may "+chi.URLParam(r, "scope"))
	})
	return r
}

func TestChiExample(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	srv := testkit.Serve(t, chiOrders(env.Client))
	tests := []struct {
		name, path, user string
		status           int
		body             string
	}{
		{"a viewer reads an order", "/orders/42", "ann", 200, "order 42"},
		{"ben may not", "/orders/42", "ben", 403, ""},
		{"no token", "/orders/42", "", 401, ""},
		{"the scope from the URL: granted", "/can/read", "ann", 200, "may read"},
		{"the scope from the URL: denied", "/can/write", "ann", 403, ""},
		{"a path that is not canonical", "/orders/a/../42", "ann", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+tt.path, nil))(t)
			if tt.user != "" {
				req.Header.Set("Authorization", "Bearer "+env.Tokens[tt.user])
			}
			resp := testkit.Must(srv.Client().Do(req))(t)
			defer resp.Body.Close()
			body := testkit.Must(io.ReadAll(resp.Body))(t)
			assert.Equal(t, tt.status, resp.StatusCode, string(body))
			if tt.status == http.StatusOK {
				assert.Equal(t, tt.body, string(body))
				return
			}
			adaptertest.CheckErrorBody(t, resp.StatusCode, body)
		})
	}
}

// The table every adapter shares, on chi's router with the middleware as
// it is.
func TestChiAdapterTable(t *testing.T) {
	t.Parallel()
	adaptertest.RunHTTP(t, adaptertest.Start(t), func(_ *testing.T, c adaptertest.Checker) http.Handler {
		r := chi.NewRouter()
		r.With(middleware.RequireFunc(c, func(r *http.Request) (string, []string) {
			res, ok := adaptertest.Operations[chi.URLParam(r, "op")]
			if !ok {
				return "", nil
			}
			return res.Name, res.Scopes
		}, middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second)))).
			Get("/orders/{op}", func(w http.ResponseWriter, r *http.Request) {
				body := adaptertest.Ran + chi.URLParam(r, "op")
				if _, ok := middleware.DecisionFromContext(r.Context()); !ok {
					body += adaptertest.NoDecision
				}
				_, _ = io.WriteString(w, body)
			})
		return r
	})
}
