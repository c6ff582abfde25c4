package pep

import (
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// SetDPoPToken makes token a DPoP-bound token (RFC 9449) for every later
// call that has no per-call token: each attempt, retries included, is sent
// with "Authorization: DPoP <token>" and a fresh proof made by signer, the
// key the token is bound to, carrying the latest DPoP-Nonce the gateway's
// origin sent. A use_dpop_nonce challenge (a 401 or 400 with that error in a
// DPoP WWW-Authenticate and a DPoP-Nonce header) is answered by sending the
// request once more with the new nonce; that does not count against the
// retry budget and emits no event.
//
// Like SetToken, it purges the previous token's cached decisions and then
// emits tokenSet, with TokenType "DPoP". An empty token is ClearToken(); a
// nil signer makes later calls fail with ErrNoToken without sending
// anything.
func (c *Client) SetDPoPToken(token string, signer *dpop.Signer) {
	if token == "" {
		c.ClearToken()
		return
	}
	c.setCredential(transport.NewDPoP(token, signer))
}
