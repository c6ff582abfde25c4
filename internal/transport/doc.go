// Package transport is the HTTP machinery that the decision clients (pep
// and authzen) share: the credential attached to each attempt (Bearer or
// DPoP), retries with backoff, the circuit breaker, deadlines read on the
// clock (Late), bounded body reading, the ResponseError that
// describes an unusable answer, redaction of server text that could hold a
// token, and the sentinel errors both clients re-export. The client core
// (internal/core) drives it: the settings, the token's lifecycle, the call
// wrapper, the coalescing of identical requests.
//
// It knows nothing of either wire format: a client encodes its request,
// hands the bytes to an Exchanger, and decodes the 200 body it gets back.
package transport
