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
// Toxiproxy's own toxic goroutines are let go: in v2.5.0 (the newest the
// module proxy offers), a toxic's pipe whose link is closed under it (the
// proxy stopped, a toxic removed while data flows) can stay blocked sending
// on a channel nobody reads any more. That is Toxiproxy's leak, inside its
// links, not one of ours; every other goroutine (clients, servers, the
// tests' own) must end.
func TestMain(m *testing.M) {
	zerolog.SetGlobalLevel(zerolog.Disabled)
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"))
}
