package mockserver

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// With a shared store (WithReplayStore), authorization codes are sealed
// rather than kept: a code is what it stands for, encrypted and
// authenticated (AES-256-GCM) under a key derived from the key seed, so
// that any replica given the seed redeems it, whichever issued it. Its
// one-time use is recorded in the shared store when it is redeemed (by a
// digest of its random id, until it expires): a code redeemed at one
// replica is refused at every other. Issuing one stores nothing. Without a
// shared store codes are kept in memory (codeStore in authcode.go).

// sealedCode is the sealed form of an authCode.
type sealedCode struct {
	ID          string `json:"i"` // random: names the code's one-time record
	Realm       string `json:"r"`
	ClientID    string `json:"c"`
	RedirectURI string `json:"u"`
	Username    string `json:"n"`
	Scope       string `json:"s,omitempty"`
	ScopeGiven  bool   `json:"g,omitempty"`
	Nonce       string `json:"o,omitempty"`
	Challenge   string `json:"p,omitempty"`
	JKT         string `json:"k,omitempty"` // dpop_jkt
	AuthTime    int64  `json:"a"`           // Unix nanoseconds
	Expires     int64  `json:"e"`           // Unix nanoseconds
	Lifetime    int64  `json:"l"`           // the token's, in seconds
}

// codeAEAD returns the AEAD of authorization codes under key.
func codeAEAD(key []byte) cipher.AEAD {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("mockserver: the code key is not 32 bytes") // derivedKey makes 32
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic("mockserver: " + err.Error())
	}
	return g
}

// sealCode returns the code that stands for c, sealed under key; the
// realm is authenticated data, so a code of one realm opens in no other.
func sealCode(key []byte, c *authCode) string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	b, _ := json.Marshal(sealedCode{ID: base64.RawURLEncoding.EncodeToString(id[:]), Realm: c.realm,
		ClientID: c.clientID, RedirectURI: c.redirectURI, Username: c.username, Scope: c.scope,
		ScopeGiven: c.scopeGiven, Nonce: c.nonce, Challenge: c.challenge, JKT: c.jkt,
		AuthTime: c.authTime.UnixNano(), Expires: c.expires.UnixNano(), Lifetime: int64(c.lifetime / time.Second)})
	g := codeAEAD(key)
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(b)+g.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(g.Seal(nonce, nonce, b, []byte(c.realm)))
}

// openCode returns what realm's sealed code raw stands for and its id;
// false for anything this server's key did not seal for realm. raw is
// bounded by the token request's body (maxBody).
func openCode(key []byte, realm, raw string) (*authCode, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(raw)
	g := codeAEAD(key)
	if err != nil || len(b) < g.NonceSize()+g.Overhead() {
		return nil, "", false
	}
	plain, err := g.Open(nil, b[:g.NonceSize()], b[g.NonceSize():], []byte(realm))
	if err != nil {
		return nil, "", false
	}
	var sc sealedCode
	// A code without its token's lifetime (sealed by an older version)
	// cannot say how long a reuse must revoke its token: refused.
	if json.Unmarshal(plain, &sc) != nil || sc.Realm != realm || sc.ID == "" ||
		sc.Lifetime < 1 || sc.Lifetime > store.MaxTokenLifetimeSeconds {
		return nil, "", false
	}
	return &authCode{realm: sc.Realm, clientID: sc.ClientID, redirectURI: sc.RedirectURI, username: sc.Username,
		scope: sc.Scope, scopeGiven: sc.ScopeGiven, nonce: sc.Nonce, challenge: sc.Challenge, jkt: sc.JKT,
		authTime: time.Unix(0, sc.AuthTime), expires: time.Unix(0, sc.Expires),
		lifetime: time.Duration(sc.Lifetime) * time.Second}, sc.ID, true
}

// issueCode returns a new code for c: sealed with a shared store, kept in
// memory otherwise (false when the realm's store is full).
func (s *Server) issueCode(c *authCode) (string, bool) {
	if s.shared != nil {
		return sealCode(s.auth.codeKey, c), true
	}
	return s.auth.codes.add(c.authTime, c)
}

// codeSpend is a code whose redemption passed every check of the code
// (redeemCode), to spend (spendCode) once its client is authenticated and
// everything else that can refuse the request has passed: its realm and
// id (the sealed code's id, or the kept code itself), its issue and expiry,
// and who redeems it.
type codeSpend struct {
	realm, id string
	sealed    bool      // recorded in the shared store; else kept in memory (codeStore)
	issued    time.Time // no spend of the code can be older
	expires   time.Time
	lifetime  time.Duration // of the code's token (authCode.lifetime)
	// writer is the spend's record's value (codeRedeemer): the retry of
	// the same redemption finds the record its own.
	writer string
}

// codeRedeemer returns who redeems sp: a base64url HMAC-SHA256, under a
// key derived from the key seed, of the code's id and what the token
// request gives with it (the client's id and secret, the redirect URI,
// the PKCE verifier, and jkt, the DPoP key's thumbprint, empty without a
// proof), each given or not. It is the same for the same redemption
// retried, at any replica given the seed, and another for anyone without
// the verifier (or, for a confidential client without PKCE, the secret):
// a thief holding the code alone. Being a MAC, the record holds nothing
// from which a verifier or a secret can be tested offline.
func (s *Server) codeRedeemer(sp *codeSpend, clientID, secret string, form url.Values, jkt string) string {
	m := hmac.New(sha256.New, s.auth.redeemerKey)
	field := func(v string, given bool) {
		var n [9]byte
		if given {
			n[0] = 1
		}
		binary.BigEndian.PutUint64(n[1:], uint64(len(v)))
		m.Write(n[:])
		m.Write([]byte(v))
	}
	verifier, hasVerifier := form["code_verifier"]
	field(sp.realm, true)
	field(sp.id, true)
	field(clientID, true)
	field(secret, secret != "")
	field(form.Get("redirect_uri"), true)
	field(strings.Join(verifier, ""), hasVerifier)
	field(jkt, jkt != "")
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// findCode returns what realm's code raw stands for, spent or not, and
// the spend that redeems it (spendCode); nothing is spent here.
func (s *Server) findCode(realm, raw string) (*authCode, *codeSpend, bool) {
	if s.shared == nil {
		c, ok := s.auth.codes.peek(realm, raw)
		if !ok {
			return nil, nil, false
		}
		return c, &codeSpend{realm: realm, id: raw, issued: c.expires.Add(-codeLifetime), expires: c.expires, lifetime: c.lifetime}, true
	}
	c, id, ok := openCode(s.auth.codeKey, realm, raw)
	if !ok {
		return nil, nil, false
	}
	return c, &codeSpend{realm: realm, id: id, sealed: true, issued: c.expires.Add(-codeLifetime), expires: c.expires, lifetime: c.lifetime}, true
}

// errCodeSpent is the refusal of a code redeemed already.
var errCodeSpent = &oauthError{status: http.StatusBadRequest, code: "invalid_grant", description: "the code is unknown, already used, or not issued to this client"}

// spendCode spends sp, a code whose every check passed, its client
// authenticated and its DPoP proof recorded: the last step before its
// token is minted, so that nothing but the code itself can refuse a
// redemption that spent it. Of any number of redemptions of one code,
// concurrent, repeated or at different replicas, exactly one passes: a
// kept code is claimed under the code store's lock (codeStore.claim); a
// sealed one is recorded in the shared store (SharedStore.RecordOnce, as
// sp.writer: a redemption whose record reached the store but failed after
// it is retried as its own) and then finished (SharedStore.Finish: the one
// atomic step only one call wins). Every other is invalid_grant and
// revokes the token the code issued (codeReused). A store that cannot be
// asked is 503 with Retry-After, before the code is spent where it can
// tell (RecordOnce writes nothing when it fails before the write); a
// store whose keyspace is younger than the code is invalid_grant for
// good.
func (s *Server) spendCode(ctx context.Context, w http.ResponseWriter, sp *codeSpend, clientID string) *oauthError {
	// The token is stamped (iat) in whole seconds, no earlier than now:
	// asked before the code is spent, so that a store that could never
	// vouch for the token refuses the request with the code still unspent.
	// A keyspace too young to vouch for a token issued now is younger
	// than the code, issued earlier: no retry of it can pass.
	if ir := s.issueRefusal(ctx, sp.realm, "", s.now().Truncate(time.Second)); ir != nil {
		if ir.young {
			return oauthErrorf(http.StatusBadRequest, "invalid_grant", "%s", said(errSharedPredates.Error()))
		}
		w.Header().Set("Retry-After", ir.retryAfter)
		return oauthErrorf(http.StatusServiceUnavailable, "temporarily_unavailable", "%s", said(ir.message))
	}
	if !sp.sealed {
		if !s.auth.codes.claim(sp.realm, sp.id) {
			s.codeReused(ctx, sp, clientID)
			return errCodeSpent
		}
		return nil
	}
	refusal := func(err error) *oauthError {
		if errors.Is(err, errSharedPredates) { // no retry can pass: the client starts again
			return oauthErrorf(http.StatusBadRequest, "invalid_grant", "%s", said(err.Error()))
		}
		w.Header().Set("Retry-After", proofRetryAfter)
		return oauthErrorf(http.StatusServiceUnavailable, "temporarily_unavailable", "%s", said(err.Error()))
	}
	// The spend is kept as long as a redemption of the code can still mint
	// (codeTokenSpec: by the code's expiry plus its token's lifetime), not
	// only while the code is valid: a redemption that stalled between its
	// checks and this step past the code's expiry would otherwise find the
	// first one's record gone and spend the code again (a-last10b).
	mine, err := s.sharedRecord(ctx, labelCodeSpent, sp.realm, sp.id, sp.writer, sp.expires.Add(sp.lifetime), sp.issued)
	if err != nil {
		return refusal(err)
	}
	if mine {
		if mine, err = s.sharedFinish(ctx, labelCodeSpent, sp.realm, sp.id, sp.writer); err != nil {
			return refusal(err)
		}
	}
	if !mine {
		s.codeReused(ctx, sp, clientID)
		return errCodeSpent
	}
	return nil
}

// codeTokenSpec returns spec for the token sp's code issues: its jti
// (codeTokenID), the lifetime the code carries, and the latest expiry it
// may have, the code's expiry plus that lifetime, so that a redemption
// held up (a frozen process) between its checks and the mint still gets
// no token that outlives its revocation (codeReused).
func (s *Server) codeTokenSpec(spec tokenSpec, sp *codeSpend) tokenSpec {
	spec.jti, spec.lifetime, spec.expiresBy = s.codeTokenID(sp), sp.lifetime, sp.expires.Add(sp.lifetime)
	return spec
}

// codeTokenID returns the jti of the access token sp's code issues: an
// HMAC of the code's realm and id under a key derived from the key seed,
// the same at every replica, so that a reuse of the code can revoke the
// token without anything recorded at its issue.
func (s *Server) codeTokenID(sp *codeSpend) string {
	m := hmac.New(sha256.New, s.auth.redeemerKey)
	m.Write([]byte("orgauthz mockserver authorization code token\x00" + sp.realm + "\x00" + sp.id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// codeReused revokes the access token sp's code issued, or is about to
// (RFC 6749 section 4.1.2: a code used more than once is refused and its
// tokens SHOULD be revoked), by its jti (codeTokenID), at every replica
// with a shared store, until the latest expiry it can have: the code's
// expiry plus the lifetime the code carries (its token is minted with
// that lifetime, and expires by then: codeTokenSpec), plus
// dpop.ReplayStoreMargin. So the record lasts as long as the token, not
// longer: not by the configuration read here (a-server10), nor by the
// longest a configuration can name (a-server10b). Only a redemption whose
// client authenticated and whose every check of the code passed gets
// here. A store that fails leaves the revocation to this replica alone
// (logged): the reuse is refused either way.
func (s *Server) codeReused(ctx context.Context, sp *codeSpend, clientID string) {
	jti, now := s.codeTokenID(sp), s.now()
	until := sp.expires.Add(sp.lifetime + dpop.ReplayStoreMargin)
	if _, err := s.sharedRecord(ctx, labelRevoked, sp.realm, jti, anyWriter, until, sp.issued); err != nil && !errors.Is(err, errSharedPredates) {
		s.logger.Warn("a reused code's token was revoked at this replica only", "realm", sp.realm, "client", clientID)
	}
	s.auth.revoked.revoke(sp.realm, jti, until, now)
	s.logger.Info("authorization code reused: its token is revoked", "realm", sp.realm, "client", clientID, "jti", jti)
}
