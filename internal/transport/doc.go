// Package transport is the HTTP machinery that the decision clients (pep
// and authzen) share: the credential attached to each attempt (Bearer or
// DPoP), retries with backoff, the circuit breaker, coalescing of
// identical requests, bounded body reading, the ResponseError that
// describes an unusable answer, redaction of server text that could hold a
// token, and the sentinel errors both clients re-export.
//
// It knows nothing of either wire format: a client encodes its request,
// hands the bytes to an Exchanger, and decodes the 200 body it gets back.
package transport

import "time"

// Defaults both clients apply, so that pep and authzen behave alike out of
// the box.
const (
	DefaultTimeout         = 2 * time.Second
	DefaultRetryMax        = 2
	DefaultRetryMinWait    = 25 * time.Millisecond
	DefaultRetryMaxWait    = 400 * time.Millisecond
	DefaultCacheSize       = 10_000
	DefaultCacheMaxBytes   = 32 << 20
	DefaultAllowTTL        = 30 * time.Second
	DefaultDenyTTL         = 10 * time.Second
	DefaultBreakerFailures = 5
	DefaultBreakerCoolDown = 5 * time.Second
	// DefaultMaxTokenBytes bounds the token a client sends: a real JWT,
	// DPoP-bound or not, is a few KiB at most.
	DefaultMaxTokenBytes = 16 << 10
)
