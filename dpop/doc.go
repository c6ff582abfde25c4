// Package dpop implements OAuth 2.0 Demonstrating Proof of Possession (DPoP,
// RFC 9449): proofs that bind an access token to a key the client holds.
//
// The client side is [Signer]: it wraps a key ([NewSigner] for any
// crypto.Signer, [GenerateKey] for a fresh P-256 key) and makes one proof per
// HTTP request with [Signer.Proof]. The proof goes in the request's DPoP
// header, the token in "Authorization: DPoP <token>". [Signer.Thumbprint] is
// the key's RFC 7638 thumbprint, the value a bound token carries in cnf.jkt.
//
// The server side is [Verifier]: [Verifier.Verify] runs every check of RFC 9449
// section 4.3 (one DPoP header; a well-formed compact JWS; typ "dpop+jwt"; an
// allow-listed asymmetric alg; a public embedded jwk that verifies the
// signature; htm and htu matching the request; iat inside a window; a jti not
// seen before; a nonce when the server requires one; ath matching the access
// token) and the key binding of section 7 (the key's thumbprint equals the
// token's cnf.jkt). Each failure is a distinct error value; [ErrorCode],
// [ErrorDescription] and [Verifier.Challenge] turn it into the OAuth error code
// and WWW-Authenticate challenge a server answers with. Verify records the
// proof's jti, so call it once the caller is authenticated; where it is not
// yet (a token endpoint, before the client or code is checked),
// [Verifier.Check] runs the same checks without recording and
// [Verifier.Record] records once the caller is: nothing an unauthenticated
// request sends is stored. A full replay cache forgets its oldest proofs,
// never accepting their replays, rather than refuse every proof. A proof is
// identified by its key and jti, never by its bytes: each part has one
// base64url encoding, but an ECDSA signature has a second valid form
// anyone can make, so that form of an accepted proof is refused as a
// replay too; the Signer's ES256 signatures are the low-S form.
//
// Replicas of one service share what they must: [WithReplayStore] puts the
// replay check in a [ReplayStore] they all use (redisstore has one on
// Redis), so a proof accepted by one replica is a replay at every other,
// and a store that fails refuses proofs ([ErrReplayStoreUnavailable]);
// [NewHMACNonces] makes nonces every replica holding the same secret
// accepts, with no shared state.
//
// [HTU] and [TokenHash] compute the normalised "htu" and the "ath" value, so
// both sides derive them the same way.
//
// The package depends only on the standard library and go-jose
// (github.com/go-jose/go-jose/v4), which signs proofs. The Verifier reads a
// proof once, itself: the header, the jwk and the claims by the module's
// strict JSON reader, the key under the rules go-jose applies to a public
// JWK, the signature by crypto/ecdsa, crypto/rsa and crypto/ed25519.
package dpop
