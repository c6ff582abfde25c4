package middleware_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

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

	client, err := pep.New(gateway.URL, "shop", "orders-api")
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
