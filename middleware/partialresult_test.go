package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// partialChecker is a Checker that answers only about the first scope it
// is asked (a wrapper that dropped the rest, or merged answers wrongly):
// the result names one GRANT, with Status Grant and no error.
type partialChecker struct{}

func (partialChecker) CheckMany(_ context.Context, rs []pep.Resource, _ ...pep.CallOption) (pep.Result, error) {
	return pep.Result{Status: pep.Grant, Decisions: []pep.Decision{{Resource: rs[0].Name, Scope: rs[0].Scopes[0], Status: pep.Grant}}}, nil
}

// otherChecker grants a pair the guard did not ask about.
type otherChecker struct{}

func (otherChecker) CheckMany(_ context.Context, _ []pep.Resource, _ ...pep.CallOption) (pep.Result, error) {
	return pep.Result{Status: pep.Grant, Decisions: []pep.Decision{{Resource: "public", Scope: "read", Status: pep.Grant}}}, nil
}

// TestAResultThatDecidesLessGrantsNothing: behind Require(c, "orders",
// "read", "delete"), a Checker whose result grants only "read", or a pair
// the guard never asked, lets no request through (a-edge16b F2: the guard
// granted on every decision the result listed, not every pair it asked).
func TestAResultThatDecidesLessGrantsNothing(t *testing.T) {
	for name, c := range map[string]middleware.Checker{"partial": partialChecker{}, "other": otherChecker{}} {
		t.Run(name, func(t *testing.T) {
			var ran atomic.Bool
			h := middleware.Require(c, "orders", "read", "delete")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ran.Store(true)
			}))
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/orders/1", nil)
			req.Header.Set("Authorization", "Bearer abc")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if ran.Load() || resp.StatusCode == http.StatusOK {
				t.Errorf("the handler guarded by orders/read+delete ran (status %d) on a result that granted no delete", resp.StatusCode)
			}
		})
	}
}

// TestClassifyAsked: a result grants only when it decides exactly the pairs
// asked, each by GRANTs alone; anything less, or more, is no decision.
func TestClassifyAsked(t *testing.T) {
	t.Parallel()
	d := func(resource, scope string, s pep.Status) pep.Decision {
		return pep.Decision{Resource: resource, Scope: scope, Status: s}
	}
	for _, tt := range []struct {
		name string
		ds   []pep.Decision
		want middleware.Answer
	}{
		{"every pair granted", []pep.Decision{d("orders", "read", pep.Grant), d("orders", "delete", pep.Grant)}, middleware.AnswerGrant},
		{"every pair granted, one twice", []pep.Decision{d("orders", "read", pep.Grant), d("orders", "delete", pep.Grant), d("orders", "read", pep.Grant)}, middleware.AnswerGrant},
		{"a pair missing", []pep.Decision{d("orders", "read", pep.Grant)}, middleware.AnswerUnavailable},
		{"a pair not asked", []pep.Decision{d("orders", "read", pep.Grant), d("orders", "delete", pep.Grant), d("public", "read", pep.Grant)}, middleware.AnswerUnavailable},
		{"another resource's pairs", []pep.Decision{d("invoices", "read", pep.Grant), d("invoices", "delete", pep.Grant)}, middleware.AnswerUnavailable},
		{"nothing", nil, middleware.AnswerDenied},
		{"a pair denied", []pep.Decision{d("orders", "read", pep.Grant), d("orders", "delete", pep.Deny)}, middleware.AnswerDenied},
		{"a pair granted and denied", []pep.Decision{d("orders", "read", pep.Grant), d("orders", "delete", pep.Grant), d("orders", "delete", pep.Deny)}, middleware.AnswerDenied},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := pep.Result{Status: pep.Grant, Decisions: tt.ds} // as a Checker sums them
			for _, d := range tt.ds {
				if d.Status != pep.Grant {
					res.Status = pep.Deny
				}
			}
			if got := middleware.ClassifyAsked("orders", []string{"read", "delete"}, res, nil, false); got != tt.want {
				t.Errorf("ClassifyAsked = %v, want %v", got, tt.want)
			}
		})
	}
}

// rewritingChecker rewrites the scopes it is asked, in place, to "read"
// (a wrapper that "normalizes" its input), and grants what it then holds;
// it records the scopes it was first asked.
type rewritingChecker struct{ asked chan []string }

func (c rewritingChecker) CheckMany(_ context.Context, rs []pep.Resource, _ ...pep.CallOption) (pep.Result, error) {
	c.asked <- append([]string(nil), rs[0].Scopes...)
	res := pep.Result{Status: pep.Grant}
	for i := range rs[0].Scopes {
		rs[0].Scopes[i] = "read"
		res.Decisions = append(res.Decisions, pep.Decision{Resource: rs[0].Name, Scope: "read", Status: pep.Grant})
	}
	return res, nil
}

// TestACheckerRewritingWhatItIsAskedGrantsNothing: a guard reads the
// Checker's answer against what it asked, which the Checker cannot
// change: behind Require(c, "orders", "delete"), a Checker that rewrites
// the scopes it was handed to "read" and grants those lets no request
// through, and the next request still asks "delete" (the guard handed
// the Checker its own route's slice and read the answer against it after
// the Checker rewrote it, so the handler ran, and every later request
// asked "read").
func TestACheckerRewritingWhatItIsAskedGrantsNothing(t *testing.T) {
	c := rewritingChecker{asked: make(chan []string, 2)}
	var ran atomic.Bool
	h := middleware.Require(c, "orders", "delete")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran.Store(true) }))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for i := range 2 {
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/orders/1", nil)
		req.Header.Set("Authorization", "Bearer abc")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ran.Load() || resp.StatusCode == http.StatusOK {
			t.Fatalf("request %d: the handler guarded by orders/delete ran (status %d) on a grant of orders/read", i, resp.StatusCode)
		}
		if got := <-c.asked; len(got) != 1 || got[0] != "delete" {
			t.Fatalf("request %d asked %q, want [delete]", i, got)
		}
	}
}
