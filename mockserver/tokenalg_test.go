package mockserver

// es256Tokens makes a test's server sign access tokens ES256, with the
// P-256 key every realm has from the start, rather than RS256 (the
// default, as Keycloak's) with a 2048-bit RSA key the realm makes on its
// first token: 70 to 110 ms of CPU under -race for each server, and the
// package's tests start a few hundred. The tests that use it are about
// something other than the token's algorithm; the ones about tokens, the
// issuer, the JWKS, discovery, the org API's authentication, revocation
// and replicas sharing keys (identity_test.go, auth_test.go,
// revoke_test.go, replicas_test.go, authcode_test.go, TestDPoPBoundTokens)
// run on the default, RS256, as users' servers do. Each server still makes
// keys of its own: a key shared between servers would make one accept
// another's tokens. The external tests have the same option under the same
// name (decisions_test.go).
var es256Tokens = WithAccessTokenAlgorithm("ES256")
