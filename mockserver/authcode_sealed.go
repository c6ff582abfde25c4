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
	AuthTime    int64  `json:"a"` // Unix nanoseconds
	Expires     int64  `json:"e"` // Unix nanoseconds
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
		ScopeGiven: c.scopeGiven, Nonce: c.nonce, Challenge: c.challenge,
		AuthTime: c.authTime.UnixNano(), Expires: c.expires.UnixNano()})
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
	if json.Unmarshal(plain, &sc) != nil || sc.Realm != realm || sc.ID == "" {
		return nil, "", false
	}
	return &authCode{realm: sc.Realm, clientID: sc.ClientID, redirectURI: sc.RedirectURI, username: sc.Username,
		scope: sc.Scope, scopeGiven: sc.ScopeGiven, nonce: sc.Nonce, challenge: sc.Challenge,
		authTime: time.Unix(0, sc.AuthTime), expires: time.Unix(0, sc.Expires)}, sc.ID, true
}

// issueCode returns a new code for c: sealed with a shared store, kept in
// memory otherwise (false when the realm's store is full).
func (s *Server) issueCode(c *authCode) (string, bool) {
	if s.shared != nil {
		return sealCode(s.auth.codeKey, c), true
	}
	return s.auth.codes.add(c.authTime, c)
}

// codeSpend is a sealed code to record as spent once its client is
// authenticated: its id and expiry, and who redeems it.
type codeSpend struct {
	realm, id string
	issued    time.Time // no spend of the code can be older
	expires   time.Time
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

// findCode returns what realm's code raw stands for. A kept code is
// taken (spent) at once; a sealed one is returned with the spend to record
// (spendSealedCode) whatever the rest of the request's checks say.
func (s *Server) findCode(realm, raw string) (*authCode, *codeSpend, bool) {
	if s.shared == nil {
		c, ok := s.auth.codes.take(realm, raw)
		return c, nil, ok
	}
	c, id, ok := openCode(s.auth.codeKey, realm, raw)
	if !ok {
		return nil, nil, false
	}
	return c, &codeSpend{realm: realm, id: id, issued: c.expires.Add(-codeLifetime), expires: c.expires}, true
}

// spendSealedCode records sp in the shared store: a code is redeemed at
// most once between the replicas. It returns the refusal of a code spent
// already by another redeemer (invalid_grant) or of a store that fails
// (503). The store decides whether it can vouch for the code (its
// keyspace is older than the code's issue, less the clocks' margin)
// before it writes the spend (SharedStore.RecordOnce), so a keyspace that
// cannot vouch never leaves the code spent: its retry is redeemed, or
// refused 503 again. A spend that reached the store but failed after it
// (too few replicas acknowledged it with redisstore.WithReplicas, or its
// answer came past the server's bound) leaves a record that says who
// wrote it (sp.writer, codeRedeemer): the same redemption retried finds
// it its own and is answered as the first would have been, anyone else's
// is invalid_grant.
func (s *Server) spendSealedCode(ctx context.Context, sp *codeSpend) *oauthError {
	mine, err := s.sharedRecord(ctx, labelCodeSpent, sp.realm, sp.id, sp.writer, sp.expires, sp.issued)
	switch {
	case errors.Is(err, errSharedPredates): // no retry can pass: the client starts again
		return &oauthError{status: http.StatusBadRequest, code: "invalid_grant", description: err.Error()}
	case err != nil:
		return &oauthError{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", description: err.Error()}
	case !mine:
		return &oauthError{status: http.StatusBadRequest, code: "invalid_grant", description: "the code is unknown, already used, or not issued to this client"}
	}
	return nil
}
