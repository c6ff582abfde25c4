package pep

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/orgauthz/orgauthz/dpop"
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
	c.setCredential(&dpopCredential{token: token, signer: signer})
}

// dpopCredential is a DPoP-bound token and the key it is bound to.
type dpopCredential struct {
	token  string
	signer *dpop.Signer
}

func (d *dpopCredential) ident() tokenIdent { return tokenIdent{scheme: schemeDPoP, token: d.token} }

func (d *dpopCredential) usable() error {
	if d.signer == nil {
		return errors.New("SetDPoPToken was given a nil signer")
	}
	return nil
}

func (d *dpopCredential) authorize(r *http.Request, nonce string) error {
	proof, err := d.signer.Proof(r.Method, r.URL.String(), d.token, nonce)
	if err != nil {
		return err
	}
	r.Header.Set("Authorization", "DPoP "+d.token)
	r.Header.Set("DPoP", proof)
	return nil
}

// nonceStore keeps the latest DPoP-Nonce each server origin sent. It is safe
// for concurrent use. A client talks to one gateway and follows no
// redirects, so it holds one entry in practice; it is bounded all the same.
type nonceStore struct {
	mu sync.Mutex
	m  map[string]string
}

const maxNonceOrigins = 16

func (s *nonceStore) get(origin string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[origin]
}

func (s *nonceStore) set(origin, nonce string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxNonceOrigins && s.m[origin] == "" {
		s.m = make(map[string]string)
	}
	s.m[origin] = nonce
}

// origin returns the lower-cased scheme://host[:port] of u, without a
// default port: nonces are per server origin.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// nonceChallenge returns the new nonce of a use_dpop_nonce challenge: a 401
// or 400 whose WWW-Authenticate holds a DPoP challenge with that error, and
// a DPoP-Nonce header. It returns "" for any other response.
func nonceChallenge(resp *http.Response) string {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusBadRequest {
		return ""
	}
	nonce := resp.Header.Get("DPoP-Nonce")
	if nonce == "" {
		return ""
	}
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if dpopChallengeError(v) == "use_dpop_nonce" {
			return nonce
		}
	}
	return ""
}

// dpopChallengeError returns the error parameter of the DPoP challenge in a
// WWW-Authenticate value (RFC 9449 section 7.1), or "" when there is none.
// The value may hold several challenges (Bearer and DPoP, say), each with
// parameters whose values are tokens or quoted strings.
func dpopChallengeError(header string) string {
	scheme, rest := "", header
	for {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" {
			return ""
		}
		n := tokenLen(rest)
		if n == 0 { // not a token: skip one character
			rest = rest[1:]
			continue
		}
		name := rest[:n]
		rest = strings.TrimLeft(rest[n:], " \t")
		afterEquals := strings.TrimLeft(rest, "=")
		if afterEquals == rest { // a name without "=" is a scheme
			scheme = strings.ToLower(name)
			continue
		}
		if t := strings.TrimLeft(afterEquals, " \t"); t == "" || t[0] == ',' {
			rest = afterEquals // a token68 such as "abc==": no parameter
			continue
		}
		var value string
		value, rest = paramValue(strings.TrimLeft(rest[1:], " \t"))
		if scheme == "dpop" && strings.EqualFold(name, "error") {
			return value
		}
	}
}

// tokenLen returns the length of the RFC 9110 token at the start of s.
func tokenLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return i
		}
	}
	return len(s)
}

// paramValue reads a token or quoted-string parameter value at the start of
// s and returns it with the rest of s.
func paramValue(s string) (value, rest string) {
	if !strings.HasPrefix(s, `"`) {
		n := tokenLen(s)
		return s[:n], s[n:]
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), ""
}
