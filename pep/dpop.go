package pep

import "github.com/orgauthz/orgauthz/dpop"

// SetDPoPToken makes token a DPoP-bound token (RFC 9449) for every later
// call that has no per-call token: each attempt, retries included, is sent
// with "Authorization: DPoP <token>" and a fresh proof made by signer, the
// key the token is bound to, carrying the latest DPoP-Nonce the gateway's
// origin sent. A use_dpop_nonce challenge (a 401 or 400 with that error in a
// DPoP WWW-Authenticate and a DPoP-Nonce header) is answered by sending the
// request once more with the new nonce; that does not count against the
// retry budget and emits no event.
//
// A key held in memory (signer.InMemory: dpop.GenerateKey's, or an ECDSA,
// Ed25519 or RSA private key) signs on the call's goroutine. Any other key
// (a KMS, an HSM, whose crypto.Signer takes no context) signs on a
// goroutine of its own that the call waits for only until its deadline:
// a call whose proof is not signed in time is DENY with a Cause matching
// ErrUnavailable and context.DeadlineExceeded; nothing is sent and the
// breaker does not count it. A key makes at most 16 signatures at once,
// across every pep and authzen client using it through any Signer of it:
// dpop.NewSigner called again on the same crypto.Signer value (one that
// can be compared with ==: a pointer, or a struct of comparable fields),
// and the copies Signer.WithClock makes, share its bound. A key is known
// by that value, never by the public key it claims: another crypto.Signer
// of the same public key (another tenant's that claims it, another region
// of one KMS key) has a bound of its own, so its hanging locks no other
// out; a crypto.Signer that cannot be compared has one per NewSigner. A
// call waits for a slot only until its deadline, and a slot comes back
// when the key answers, so a hung key holds at most 16 goroutines and
// callers hanging up cost no other caller anything. A key whose every slot
// has been taken for over 10 s is taken as hung: calls fail at once
// (ErrUnavailable) until one returns.
//
// Like SetToken, it purges the previous token's cached decisions and then
// emits tokenSet, with TokenType "DPoP". An empty token is ClearToken(); a
// nil signer makes later calls fail with ErrNoToken without sending
// anything.
func (c *Client) SetDPoPToken(token string, signer *dpop.Signer) { c.core.SetDPoP(token, signer) }
