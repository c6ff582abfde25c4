package middleware_test

import (
	"context"
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
// credential; the caller is named by the subject function, from what your
// authentication layer verified (here a stand-in puts the user in the
// request's context). Never take the subject from anything the client
// sends unverified, such as a header a proxy does not strip.
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
		if u, ok := r.Context().Value(verifiedUser{}).(string); ok && u != "" {
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
		if user != "" { // what the authentication layer verified
			req = req.WithContext(context.WithValue(req.Context(), verifiedUser{}, user))
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

// verifiedUser is the context key under which ExampleRequireAuthZEN's
// stand-in authentication layer puts the user it verified.
type verifiedUser struct{}
