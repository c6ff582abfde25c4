package pep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// exampleGateway is a tiny stand-in for the gateway: the token "good" may
// read orders; every other pair is denied; any other token is refused.
func exampleGateway() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var req struct {
			Resources []struct {
				Name   string   `json:"name"`
				Scopes []string `json:"scopes"`
			} `json:"resources"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		type permission struct {
			Resource string `json:"resource"`
			Scope    string `json:"scope"`
			Status   string `json:"status"`
		}
		answer := struct {
			Status      string       `json:"status"`
			Permissions []permission `json:"permissions"`
		}{Status: "GRANT"}
		for _, res := range req.Resources {
			for _, s := range res.Scopes {
				p := permission{res.Name, s, "DENY"}
				if res.Name == "orders" && s == "read" {
					p.Status = "GRANT"
				} else {
					answer.Status = "DENY"
				}
				answer.Permissions = append(answer.Permissions, p)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
}

func Example() {
	gw := exampleGateway()
	defer gw.Close()

	c, err := pep.New(gw.URL, "acme", "orders-api")
	if err != nil {
		fmt.Println(err)
		return
	}
	c.SetToken("good")
	ctx := context.Background()

	d, err := c.Check(ctx, "orders", "read")
	fmt.Println(d.Resource, d.Scope, d.Status, d.Allowed(), err)

	d, _ = c.Check(ctx, "orders", "read")
	fmt.Println("second time from the cache:", d.Cached)

	r, _ := c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
	for _, d := range r.Decisions {
		fmt.Println(d.Resource, d.Scope, d.Status)
	}
	fmt.Println("all allowed:", r.Allowed())
	// Output:
	// orders read GRANT true <nil>
	// second time from the cache: true
	// orders read GRANT
	// orders write DENY
	// all allowed: false
}

func Example_failClosed() {
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":"Forbidden","message":"the gateway refused the client"}`, http.StatusForbidden)
	}))
	defer gw.Close()

	c, _ := pep.New(gw.URL, "acme", "orders-api")
	c.SetToken("good")
	d, err := c.Check(context.Background(), "orders", "read")
	fmt.Println(d.Status, d.Allowed(), err)

	var re *pep.ResponseError
	if errors.As(d.Cause, &re) {
		fmt.Println(re.StatusCode, re.Message)
	}
	// Output:
	// DENY false <nil>
	// 403 the gateway refused the client
}

func ExampleClient_Subscribe() {
	gw := exampleGateway()
	defer gw.Close()
	c, _ := pep.New(gw.URL, "acme", "orders-api")

	c.Subscribe(func(ev events.Event) {
		fmt.Println("event:", ev.Kind, ev.TokenType)
		if ev.Kind == events.TokenExpired {
			c.SetToken("good") // e.g. a token fresh from the identity provider
		}
	})
	c.SetToken("stale")
	_, err := c.Check(context.Background(), "orders", "read")
	fmt.Println(errors.Is(err, pep.ErrUnauthorized))
	d, _ := c.Check(context.Background(), "orders", "read")
	fmt.Println(d.Allowed())
	// Output:
	// event: tokenSet Bearer
	// event: tokenExpired Bearer
	// event: tokenSet Bearer
	// true
	// true
}
