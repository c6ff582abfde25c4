package middleware_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
)

// Protect a handler with an AuthZEN PDP: here the reference server's
// AuthZEN API, with the shop fixture. The service asks with its own
// credential; the caller is named by the subject function (in production:
// the sub of a token your authentication layer verified).
func ExampleRequireAuthZEN() {
	pdp := httptest.NewUnstartedServer(nil)
	ref, err := mockserver.New(mockserver.WithFixture(shop),
		mockserver.WithIssuer("http://"+pdp.Listener.Addr().String()))
	if err != nil {
		panic(err)
	}
	pdp.Config.Handler = ref
	pdp.Start()
	defer pdp.Close()

	// Endpoints from the PDP's metadata. A PDP on the network answers well
	// within the 2 s default; this one shares a machine that may be busy
	// running tests, so allow more.
	client, err := authzen.New(pdp.URL+"/realms/shop", authzen.WithTimeout(time.Minute))
	if err != nil {
		panic(err)
	}
	own, err := ref.IssueToken("shop", "service-account-orders-api")
	if err != nil {
		panic(err)
	}
	client.SetToken(own)

	subject := func(r *http.Request) (authzen.Subject, error) {
		if u := r.Header.Get("X-Authenticated-User"); u != "" {
			return authzen.Subject{Type: "user", ID: u}, nil
		}
		return authzen.Subject{}, errors.New("not authenticated")
	}
	target := func(r *http.Request) (authzen.Action, authzen.Resource) {
		return authzen.Action{Name: "read"}, authzen.Resource{Type: "orders", ID: r.PathValue("id")}
	}
	order := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "order "+r.PathValue("id"))
	})
	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", middleware.RequireAuthZEN(client, subject, target)(order))

	for _, user := range []string{"ann", "ben", ""} {
		req := httptest.NewRequest(http.MethodGet, "/orders/42", nil)
		if user != "" {
			req.Header.Set("X-Authenticated-User", user)
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
