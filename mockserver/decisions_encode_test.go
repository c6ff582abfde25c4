package mockserver

// Run the fuzzer longer than its seeds (which every `go test` runs) with:
//
//	go test -run '^$' -fuzz '^FuzzWriteDecision$' -fuzztime 10m -parallel=1 ./mockserver

import (
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
)

// writeDecisionReference is the authorize answer written by reflection, as
// it was before writeDecision: writeDecision must write the same response.
func writeDecisionReference(res decision.Result) *httptest.ResponseRecorder {
	out := authorizeResponse{Status: res.Status, Permissions: make([]permissionBody, len(res.Permissions))}
	for i, p := range res.Permissions {
		out.Permissions[i] = permissionBody(p)
	}
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, out)
	return rec
}

func requireSameDecisionAnswer(t *testing.T, res decision.Result) {
	t.Helper()
	want := writeDecisionReference(res)
	got := httptest.NewRecorder()
	writeDecision(got, res)
	assert.Equal(t, want.Code, got.Code)
	assert.Equal(t, strconv.Itoa(got.Body.Len()), got.Header().Get("Content-Length"))
	got.Header().Del("Content-Length") // declared by writeDecision only
	assert.Equal(t, want.Header(), got.Header())
	assert.Equal(t, want.Body.String(), got.Body.String())
}

func TestWriteDecisionMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	tests := map[string]decision.Result{
		"no pairs": {Status: decision.Deny},
		"pairs": {Status: decision.Deny, Permissions: []decision.Permission{
			{Resource: "orders", Scope: "read", Status: decision.Grant},
			{Resource: "orders", Scope: "", Status: decision.Error},
			{Resource: "invoices", Scope: "pay", Status: decision.Deny}}},
		"escaping": {Status: decision.Error, Permissions: []decision.Permission{
			{Resource: `q"uote\ <&>`, Scope: "tab\t\x01\u2028", Status: decision.Error},
			{Resource: "bad \xff utf8", Scope: "caf\u00e9 \U0001F600", Status: decision.Error}}},
	}
	for name, res := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			requireSameDecisionAnswer(t, res)
		})
	}
}

// FuzzWriteDecision compares writeDecision with encoding/json on arbitrary
// names:
//
//	go test -run '^$' -fuzz '^FuzzWriteDecision$' -fuzztime 1m ./mockserver
func FuzzWriteDecision(f *testing.F) {
	f.Add("orders", "read", "invoices", "")
	f.Add("<&>", "\u2028", "\xff", `"\`)
	f.Fuzz(func(t *testing.T, r1, s1, r2, s2 string) {
		requireSameDecisionAnswer(t, decision.Result{Status: decision.Grant, Permissions: []decision.Permission{
			{Resource: r1, Scope: s1, Status: decision.Grant}, {Resource: r2, Scope: s2, Status: decision.Deny}}})
	})
}
