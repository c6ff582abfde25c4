package main

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

// hangGuard goes to the quickstart's clients: a clean call beside the rest
// of the suite on a loaded machine can overrun their 2 s and fail closed.
var hangGuard = []pep.Option{pep.WithTimeout(hangguard.Timeout)}

// TestTranscript runs the quickstart as `go run ./examples/quickstart` does,
// with the embedded fixture, and checks the outcomes the acme fixture
// implies: bob is an order clerk through Acme EU, carol is also an order
// manager through Acme US (delete, but only with DELETE), erin may only
// read invoices.
func TestTranscript(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, config{adminSecret: "admin-secret", clientOptions: hangGuard}))
	got := out.String()

	for _, want := range []string{
		`fixture examples/fixtures/acme.json, embedded`,
		`Verify +-> ok: the gateway knows realm "acme" and client "orders-api"`,
		`Verify with realm "acme-eu" +-> errors.Is\(err, pep.ErrUnknownRealm\): true`,
		`(?s)as bob.*orders +delete +DENY.*as carol`,
		`(?s)as carol.*orders +delete +GRANT`,
		`(?s)as carol.*ListGranted \(no context\) +-> orders:read, orders:write\n`,
		`(?s)as carol.*ListGranted \(as DELETE /orders/42\) +-> orders:read, orders:write, orders:delete\n`,
		`(?s)as bob.*Acme EU: Sales\n`,
		`(?s)as carol.*Acme EU: Inside Sales, Sales\n +Acme US: Operations`,
		`carol +-> 200 order 42 updated`,
		`erin +-> 403 \{"error":"Forbidden"`,
		`nobody -> 401 \{"error":"Unauthorized"`,
		`Check orders:write with DPoP +-> GRANT`,
		`the same token sent as Bearer  -> refused \(ErrUnauthorized: true\)`,
		`pep.WithBreaker\(3, time.Minute\)`,
		`Check 1 -> DENY \(allowed: false\) .*cause: pep: gateway answered 503`,
		`Check 4 -> DENY \(allowed: false\) .*cause: pep: circuit breaker open`,
		`breaker open`,
	} {
		require.Regexp(t, regexp.MustCompile(want), got)
	}

	// The sections are numbered 1, 2, 3, ... in order.
	sections := regexp.MustCompile(`(?m)^(\d+)\. `).FindAllStringSubmatch(got, -1)
	require.Len(t, sections, 7)
	for i, m := range sections {
		require.Equal(t, strconv.Itoa(i+1), m[1])
	}
}

// TestTranscriptWithFixtureFile checks that -fixture still reads a file.
func TestTranscriptWithFixtureFile(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, config{fixture: "../fixtures/acme.json", adminSecret: "admin-secret", clientOptions: hangGuard}))
	require.Contains(t, out.String(), "(fixture ../fixtures/acme.json)")
	require.Regexp(t, `(?s)as carol.*orders +delete +GRANT`, out.String())
}
