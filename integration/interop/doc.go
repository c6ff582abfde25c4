// Package interop holds tests only: the library against independent
// implementations of the standards it speaks. The reference server's
// tokens verified by go-oidc and fetched by golang.org/x/oauth2 (password,
// client credentials and authorization code with PKCE), and dpop's proofs
// checked by lestrrat-go/jwx both ways; internal/strictjson's reader
// fuzzed against json v2 (github.com/go-json-experiment/json). It lives in
// the integration module so that those libraries stay out of the library's
// own go.mod.
package interop
