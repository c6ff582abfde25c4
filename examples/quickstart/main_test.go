package main

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTranscript runs the quickstart as `go run ./examples/quickstart` does
// and checks the outcomes the acme fixture implies: bob is an order clerk
// through Acme EU, carol is also an order manager through Acme US (delete,
// but only with DELETE), erin may only read invoices.
func TestTranscript(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, config{fixture: "../fixtures/acme.json", adminSecret: "admin-secret"}))
	got := out.String()

	for _, want := range []string{
		`(?s)as bob.*orders +delete +DENY.*as carol`,
		`(?s)as carol.*orders +delete +GRANT`,
		`(?s)as bob.*Acme EU: Sales\n`,
		`(?s)as carol.*Acme EU: Inside Sales, Sales\n +Acme US: Operations`,
		`carol +-> 200 order 42 updated`,
		`erin +-> 403 \{"error":"Forbidden"`,
		`nobody -> 401 \{"error":"Unauthorized"`,
		`Check orders:write with DPoP +-> GRANT`,
		`the same token sent as Bearer +-> refused \(ErrUnauthorized: true\)`,
		`Check 1 -> DENY \(allowed: false\) .*cause: pep: gateway answered 503`,
		`Check 4 -> DENY \(allowed: false\) .*cause: pep: circuit breaker open`,
		`breaker open`,
	} {
		require.Regexp(t, regexp.MustCompile(want), got)
	}
}
