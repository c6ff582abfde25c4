package dpop

import (
	"errors"
	"strings"
)

// Errors returned by [Verifier.Verify]. Each names one failed check of RFC 9449
// section 4.3 or of the token binding of section 7, so a server can tell them
// apart with [errors.Is] and answer the matching challenge (see [ErrorCode] and
// [Verifier.Challenge]). The returned error usually wraps the sentinel with a
// short detail; the detail never contains the access token.
//
// Every error except those of the [ErrUseNonce] family and [ErrKeyMismatch]
// means the proof itself is unacceptable: the OAuth error code is
// "invalid_dpop_proof". [ErrUseNonce] (with [ErrNonceRequired] or
// [ErrNonceStale]) means "use_dpop_nonce": the client should retry with the
// nonce carried by the [*NonceError]. [ErrKeyMismatch] means the proof is fine
// but the access token is bound to another key: "invalid_token".
var (
	// ErrMissingProof means the request carries no DPoP header, or an empty one.
	ErrMissingProof = errors.New("dpop: missing DPoP proof")
	// ErrMultipleProofs means the request carries more than one DPoP header value
	// (several header lines, or one line holding a comma-separated list).
	ErrMultipleProofs = errors.New("dpop: more than one DPoP proof")
	// ErrMalformed means the proof is not a well-formed compact JWS whose header
	// and claims are JSON objects with unique member names and claims of the right
	// JSON types, or it is larger than the verifier accepts, or it uses a JOSE
	// feature a DPoP proof has no use for ("crit", "b64").
	ErrMalformed = errors.New("dpop: malformed DPoP proof")
	// ErrType means the "typ" header is not exactly "dpop+jwt" (the comparison is
	// case-sensitive).
	ErrType = errors.New("dpop: typ is not dpop+jwt")
	// ErrAlgorithm means the "alg" header is not on the verifier's allow-list.
	// "none" and every symmetric (HMAC) algorithm are never on it.
	ErrAlgorithm = errors.New("dpop: algorithm not allowed")
	// ErrKey means the "jwk" header is missing, is not a valid public key, is of a
	// type (or curve, or size) that does not fit "alg", or is a symmetric key
	// without key material.
	ErrKey = errors.New("dpop: jwk is missing, invalid or does not fit alg")
	// ErrPrivateKey means the "jwk" header holds private or secret key material
	// (one of the members d, p, q, dp, dq, qi, oth, k or priv).
	ErrPrivateKey = errors.New("dpop: jwk contains private key material")
	// ErrSignature means the signature does not verify with the embedded key.
	ErrSignature = errors.New("dpop: invalid signature")
	// ErrMissingClaim means a required claim (jti, htm, htu or iat) is absent or,
	// for the string claims, empty.
	ErrMissingClaim = errors.New("dpop: required claim missing")
	// ErrMethod means "htm" differs from the request method (case-sensitive, as
	// HTTP methods are).
	ErrMethod = errors.New("dpop: htm does not match the request method")
	// ErrURL means "htu" and the request URL differ after normalisation by [HTU],
	// or one of them is not an absolute http or https URL. [HTU] and
	// [Signer.Proof] return it for a URL they cannot normalise.
	ErrURL = errors.New("dpop: htu does not match the request url")
	// ErrIATTooOld means "iat" is further in the past than the verifier's window.
	ErrIATTooOld = errors.New("dpop: proof is too old")
	// ErrIATInFuture means "iat" is further in the future than the verifier's
	// allowed clock skew.
	ErrIATInFuture = errors.New("dpop: proof is issued in the future")
	// ErrReplay means a proof with the same key and "jti" was already accepted and
	// is still inside its validity window.
	ErrReplay = errors.New("dpop: proof replayed")
	// ErrReplayCacheFull means the verifier's replay cache is full of proofs
	// at least as new as this one (all of them, or those of this proof's
	// key), so it cannot record this one without forgetting a newer one; or
	// that the proof is no newer than one the cache forgot to make room, so
	// it cannot tell it from that one's replay (see [WithReplayCacheSize]
	// and [WithReplayKeyLimit]). It refuses the proof rather than risk
	// accepting a replay. This is a server capacity condition, not a client
	// mistake: a server should answer 503 with Retry-After; a fresh proof
	// usually passes.
	ErrReplayCacheFull = errors.New("dpop: replay cache full")
	// ErrReplayStoreUnavailable means the Verifier's [ReplayStore] failed,
	// or did not answer within the request's context (or
	// [ReplayStoreTimeout]), so it cannot tell the proof from a replay and
	// refuses it. The error wraps the store's error (never the proof or a
	// token). Like [ErrReplayCacheFull] it is a server condition, not a
	// client mistake: a server should answer 503 with Retry-After; a fresh
	// proof passes once the store is back (the refused one may have been
	// recorded before the store failed to answer).
	ErrReplayStoreUnavailable = errors.New("dpop: replay store unavailable")
	// ErrUseNonce is the parent of [ErrNonceRequired] and [ErrNonceStale]:
	// errors.Is(err, ErrUseNonce) holds for both, and the server should answer
	// "use_dpop_nonce" with a DPoP-Nonce header (RFC 9449 sections 8 and 9). The
	// error is a [*NonceError] carrying the nonce to send.
	ErrUseNonce = errors.New("dpop: use_dpop_nonce")
	// ErrNonceRequired means the server requires a nonce and the proof has none.
	ErrNonceRequired = errors.New("dpop: nonce required")
	// ErrNonceStale means the proof's nonce is not one the server accepts now.
	ErrNonceStale = errors.New("dpop: nonce is invalid or stale")
	// ErrTokenHash means an access token was presented and "ath" is absent or is
	// not the hash of that token.
	ErrTokenHash = errors.New("dpop: ath does not match the access token")
	// ErrKeyMismatch means the thumbprint of the proof's key differs from the
	// access token's cnf.jkt, or an access token was given without one.
	ErrKeyMismatch = errors.New("dpop: proof key does not match the token binding")
)

// NonceError is the error [Verifier.Verify] returns when the server's
// [Nonces] reject the proof, or when a proof dated before the Verifier was
// made carries no nonce given since (see [Verifier]). It matches
// [ErrUseNonce] and the specific cause ([ErrNonceRequired] or
// [ErrNonceStale]) under errors.Is; if minting the next nonce failed it
// also matches that error and Nonce is empty, in which case the server
// cannot issue a usable challenge and should answer 5xx.
type NonceError struct {
	// Err is ErrNonceRequired or ErrNonceStale, or for a proof dated
	// before the Verifier was made an error matching both
	// ErrNonceRequired and ErrIATTooOld.
	Err error
	// Nonce is the fresh nonce to send in the DPoP-Nonce response header.
	Nonce string
	// MintErr is the error Nonces.Next returned, if any.
	MintErr error
}

// Error returns the message of the cause; it never contains the nonce.
func (e *NonceError) Error() string {
	if e.MintErr != nil {
		return e.Err.Error() + " (minting the next nonce failed: " + e.MintErr.Error() + ")"
	}
	return e.Err.Error()
}

// Unwrap returns ErrUseNonce, the cause and the mint error if any.
func (e *NonceError) Unwrap() []error {
	errs := []error{ErrUseNonce, e.Err}
	if e.MintErr != nil {
		errs = append(errs, e.MintErr)
	}
	return errs
}

// OAuth error codes used by DPoP (RFC 9449 sections 5, 7.1, 8 and 9; RFC 6750),
// as returned by [ErrorCode].
const (
	// CodeInvalidProof is the error code for a proof that fails a check.
	CodeInvalidProof = "invalid_dpop_proof"
	// CodeUseNonce is the error code asking the client to retry with the nonce
	// sent in the DPoP-Nonce response header.
	CodeUseNonce = "use_dpop_nonce"
	// CodeInvalidToken is the error code for a valid proof whose key is not the
	// one the access token is bound to.
	CodeInvalidToken = "invalid_token"
)

// ErrorCode returns the OAuth error code for an error from [Verifier.Verify]:
// [CodeUseNonce] for the [ErrUseNonce] family, [CodeInvalidToken] for
// [ErrKeyMismatch], "" for nil, and [CodeInvalidProof] for anything else
// (unknown errors included, so a failure is never reported as success). An
// authorization server puts the code in the JSON error body of its token
// endpoint; a resource server puts it in WWW-Authenticate (see
// [Verifier.Challenge]).
func ErrorCode(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrUseNonce):
		return CodeUseNonce
	case errors.Is(err, ErrKeyMismatch):
		return CodeInvalidToken
	default:
		return CodeInvalidProof
	}
}

// describedErrors lists the sentinels in the order ErrorDescription checks
// them. The nonce causes come first so a NonceError is described by its cause.
var describedErrors = []error{
	ErrNonceRequired, ErrNonceStale, ErrUseNonce,
	ErrKeyMismatch,
	ErrMissingProof, ErrMultipleProofs, ErrMalformed, ErrType, ErrAlgorithm,
	ErrKey, ErrPrivateKey, ErrSignature, ErrMissingClaim, ErrMethod, ErrURL,
	ErrIATTooOld, ErrIATInFuture, ErrReplay, ErrReplayCacheFull, ErrReplayStoreUnavailable, ErrTokenHash,
}

// ErrorDescription returns a short human-readable description for an error
// from [Verifier.Verify], suitable for an OAuth error_description: the text of
// the matching sentinel without the "dpop: " prefix. It never contains data
// from the request, so it is safe to put in a header. It returns "" for nil
// and "invalid DPoP proof" for an error that matches no sentinel.
func ErrorDescription(err error) string {
	if err == nil {
		return ""
	}
	for _, s := range describedErrors {
		if errors.Is(err, s) {
			return strings.TrimPrefix(s.Error(), "dpop: ")
		}
	}
	return "invalid DPoP proof"
}
