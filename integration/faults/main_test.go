package faults_test

import (
	"testing"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

// TestMain silences Toxiproxy (its toxics log through zerolog's global
// logger, at trace level) and fails the run if a goroutine (a proxy link, a
// server connection, a client's request) outlives the tests.
//
// Toxiproxy's own link goroutines (the three ToxicLink.Start starts for a
// link: its reader, its writer and each toxic's pipe) are let go: in v2.5.0
// (the newest the module proxy offers), a toxic whose link is cut under it
// (the proxy stopped while data flows, the client gone) can stay blocked
// sending on a channel nobody reads any more (Shopify/toxiproxy#760), and
// the link's reader and writer with it. That is Toxiproxy's leak, inside
// its links, not one of ours; every other goroutine (clients, servers, the
// tests' own, Toxiproxy's accept loops) must end.
func TestMain(m *testing.M) {
	zerolog.SetGlobalLevel(zerolog.Disabled)
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).read"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).write"))
}
