package middleware

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackHotKnownTokenOutlivesItsRefusal: a token the guards granted
// once stays in the process-wide table after the gateway refuses it (401:
// revoked, expired, ClearToken'd upstream), and nothing in the API ever
// forgets it: a bearer secret that has been revoked stays resident (and in
// core dumps, heap profiles) until another granted token happens to take
// its slot. It vouches only for the grammar, so this is no false grant.
func TestAttackHotKnownTokenOutlivesItsRefusal(t *testing.T) {
	tok := strings.Repeat("r", 40) + ".revoked-token-of-attack-hot"
	grant := pep.Result{Status: pep.Grant, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: pep.Grant}}}
	deny := pep.Result{Status: pep.Deny, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: pep.Deny}}}
	serve := func(c checker) int {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/orders/42", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		Require(c, "orders", "read")(http.NotFoundHandler()).ServeHTTP(rec, req)
		return rec.Code
	}
	serve(checker{res: grant})
	if code := serve(checker{res: deny, err: pep.ErrUnauthorized}); code != http.StatusUnauthorized {
		t.Fatalf("a refused token got %d, want 401", code)
	}
	if known(tok) {
		t.Errorf("the token is still kept after the gateway refused it (401): a revoked secret stays in the process-wide table")
	}
}
