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

// TestAttackPartialResultGrants: Require(c, "orders", "read", "delete")
// lets a request through on a result that decided "read" only (or a pair
// it never asked), because Classify grants on res.Allowed(), every
// decision the result lists, not every pair the guard asked for. The
// handler protected by "delete" runs without a GRANT of delete.
func TestAttackPartialResultGrants(t *testing.T) {
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
