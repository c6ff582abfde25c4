package middleware

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unsafe"

	"github.com/orgauthz/orgauthz/pep"
)

// TestKnownTokensHoldNoTokenBytes: the guards' table of granted tokens
// holds digests, not tokens, so a token the gateway refuses later (401:
// revoked, expired) does not stay resident, in core dumps or heap
// profiles, for as long as the process runs; and a granted token is still
// known (its grammar is not checked again). The attack on the first
// version found the token's copy kept after its refusal.
func TestKnownTokensHoldNoTokenBytes(t *testing.T) {
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
	if code := serve(checker{res: grant}); code != http.StatusNotFound {
		t.Fatalf("a granted request got %d, want the handler's 404", code)
	}
	if !known(tok) {
		t.Fatal("a granted token is not known")
	}
	if code := serve(checker{res: deny, err: pep.ErrUnauthorized}); code != http.StatusUnauthorized {
		t.Fatalf("a refused token got %d, want 401", code)
	}
	table := unsafe.Slice((*byte)(unsafe.Pointer(&knownTokens)), unsafe.Sizeof(knownTokens))
	for i := 0; i+8 <= len(tok); i++ {
		if bytes.Contains(table, []byte(tok[i:i+8])) {
			t.Fatalf("the table holds the token's bytes %q", tok[i:i+8])
		}
	}
	if unsafe.Sizeof(knownTokens) != knownSlots*8 {
		t.Fatalf("the table is %d bytes: it holds more than a digest a slot", unsafe.Sizeof(knownTokens))
	}
}
