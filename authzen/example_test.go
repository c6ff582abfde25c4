package authzen_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/orgauthz/orgauthz/authzen"
)

// A PEP asks a PDP whether a user may read a document; a PDP answer it
// cannot read strictly is a denial with a Cause, never an allow.
func ExampleClient_Evaluate() {
	pdp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"decision":"yes"}`)) // not a JSON boolean
	}))
	defer pdp.Close()
	c, err := authzen.New(pdp.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}))
	if err != nil {
		panic(err)
	}
	c.SetToken("pep-token")
	d, err := c.Evaluate(context.Background(), authzen.Request{
		Subject:  authzen.Subject{Type: "user", ID: "alice"},
		Action:   authzen.Action{Name: "can_read"},
		Resource: authzen.Resource{Type: "document", ID: "42"},
	})
	fmt.Println(d.Allowed(), err)
	fmt.Println(d.Cause)
	// Output:
	// false <nil>
	// authzen: PDP answered 200 OK: malformed gateway response: the body is not a valid evaluation answer: a value has the wrong type
}
