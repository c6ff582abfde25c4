package telemetry_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/orgauthz/orgauthz/mockserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The names below are those of pep's and authzen's own
// tests, which another module cannot import.
const (
	testRealm  = "acme"
	testClient = "orders-api"
	pepToken   = "pep-token-0123456789abcdef"
)

// es256Tokens makes a test's reference server sign access tokens ES256,
// with the P-256 key every realm has from the start, rather than RS256 (the
// default, as Keycloak's) with a 2048-bit RSA key made on the realm's first
// token, 70 to 110 ms of CPU under -race per server, and an RSA signature
// per token. No telemetry test is about the token's algorithm; integration/interop proves the default with OpenID Connect
// libraries. Each server still makes keys of its own: a key shared between
// servers would make one accept another's tokens.
var es256Tokens = mockserver.WithAccessTokenAlgorithm("ES256")
