package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// Protect a handler with one line. Here the gateway is the reference server,
// run in process with the shop fixture.
func ExampleRequire() {
	gateway := httptest.NewUnstartedServer(nil)
	ref, err := mockserver.New(mockserver.WithFixture(shop),
		mockserver.WithIssuer("http://"+gateway.Listener.Addr().String()))
	if err != nil {
		panic(err)
	}
	gateway.Config.Handler = ref
	gateway.Start()
	defer gateway.Close()

	// A gateway on the network answers well within the 2 s default; this
	// one shares a machine that may be busy running tests, so allow more.
	client, err := pep.New(gateway.URL, "shop", "orders-api", pep.WithTimeout(time.Minute))
	if err != nil {
		panic(err)
	}
	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "the orders")
	})
	mux := http.NewServeMux()
	mux.Handle("GET /orders", middleware.Require(client, "orders", "read")(orders))

	for _, user := range []string{"ann", "ben", ""} {
		req := httptest.NewRequest(http.MethodGet, "/orders", nil)
		if user != "" {
			token, err := ref.IssueToken("shop", user)
			if err != nil {
				panic(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Printf("%-4s %d\n", user, rec.Code)
	}
	// Output:
	// ann  200
	// ben  403
	//      401
}

// Give Require options with With: here an outage answers 503 with a
// Retry-After instead of the default 403.
func ExampleMiddleware_With() {
	checker := outageChecker{} // stands in for a *pep.Client whose gateway is down
	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "the orders")
	})
	protect := middleware.Require(checker, "orders", "read").With(
		middleware.WithUnavailableHandler(middleware.ServiceUnavailable(5 * time.Second)))

	req := httptest.NewRequest(http.MethodGet, "/orders", nil)
	req.Header.Set("Authorization", "Bearer a-token")
	rec := httptest.NewRecorder()
	protect(orders).ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"))
	// Output:
	// 503 5
}

// outageChecker denies every pair for want of the gateway, as a pep client
// does when its gateway cannot be reached.
type outageChecker struct{}

func (outageChecker) CheckMany(_ context.Context, resources []pep.Resource, _ ...pep.CallOption) (pep.Result, error) {
	var ds []pep.Decision
	for _, r := range resources {
		for _, s := range r.Scopes {
			ds = append(ds, pep.Decision{Resource: r.Name, Scope: s, Status: pep.Deny, Cause: pep.ErrUnavailable})
		}
	}
	return pep.Result{Status: pep.Deny, Decisions: ds}, nil
}
