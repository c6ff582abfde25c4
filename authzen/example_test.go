package authzen_test

import (
	"bytes"
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
	// authzen: PDP answered 200 OK: malformed PDP response: the body is not a valid evaluation answer: a value has the wrong type
}

// A PEP lists the documents a user may read, page after page; the list
// grants nothing by itself, so each document is still evaluated before it
// is shown. A PDP that keeps paging with the same token gets an error, not
// an endless loop, and no partial list.
func ExampleClient_SearchResource() {
	pdp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/access/v1/search/resource":
			_, _ = w.Write([]byte(`{"page":{"next_token":""},"results":[{"type":"document","id":"42"},{"type":"document","id":"43"}]}`))
		default: // the evaluation: only document 42 today
			b := make([]byte, 512)
			n, _ := r.Body.Read(b)
			fmt.Fprintf(w, `{"decision":%t}`, bytes.Contains(b[:n], []byte(`"42"`)))
		}
	}))
	defer pdp.Close()
	c, err := authzen.New(pdp.URL, authzen.WithEndpoints(authzen.Endpoints{
		Evaluation: "/access/v1/evaluation", SearchResource: "/access/v1/search/resource"}))
	if err != nil {
		panic(err)
	}
	c.SetToken("pep-token")
	alice, read := authzen.Subject{Type: "user", ID: "alice"}, authzen.Action{Name: "can_read"}
	docs, err := c.SearchResource(context.Background(), authzen.Request{Subject: alice, Action: read,
		Resource: authzen.Resource{Type: "document"}})
	if err != nil {
		fmt.Println("no list:", err)
		return
	}
	for _, doc := range docs {
		d, _ := c.Evaluate(context.Background(), authzen.Request{Subject: alice, Action: read, Resource: doc})
		fmt.Println(doc.ID, d.Allowed())
	}
	// Output:
	// 42 true
	// 43 false
}
