package mockserver

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The web UI's session is a cookie the server signs, not a record it keeps:
// a login stores nothing, so nothing an unauthenticated request sends is
// ever stored, and the number of sessions costs no memory. A logout is the
// one thing remembered, by an authenticated request, until the session
// would have expired (revokedTokens, as for revoked access tokens).

// sessionLifetime is how long a session lasts from its login, by the
// server's clock. A session past it is refused whatever happened to the
// process meanwhile: a process frozen for an hour wakes to expired
// sessions.
const sessionLifetime = 30 * time.Minute

// sessionCookie is the name of the session cookie. Its Path is the realm's
// pages, /ui/realms/{realm}, so that each realm has its own (a cookie of
// /ui/realms/acme is not sent to /ui/realms/acme2, RFC 6265 section 5.1.4).
const sessionCookie = "orgauthz_ui"

// webUI is the web UI's state: the key that signs session cookies and CSRF
// tokens, derived from the key seed with a shared store (so that replicas
// given it accept each other's sessions) or made at New, never shown, and the sessions logged
// out here before their expiry (with a shared store, a logout is recorded
// there too, and every replica reads it: webui.go). It is safe for
// concurrent use.
type webUI struct {
	key       []byte
	loggedOut *revokedTokens
}

// newWebUI returns the state of an enabled UI. Its key is derived from
// seed (the same at every replica given it, and after a restart) only
// when sign-outs are shared (a shared store: shared), and random per
// process otherwise: a key that outlives the process needs refusals that
// outlive it, and without a shared store the sign-outs are this process's
// memory, which a restart would forget while the seed's key went on
// accepting the signed-out cookies.
func newWebUI(seed []byte, shared bool) *webUI {
	if !shared {
		seed = nil
	}
	return &webUI{key: derivedKey(seed, labelSessionKey), loggedOut: newRevokedTokens()}
}

// uiSession is a request's valid session.
type uiSession struct {
	realm, userID string
	id            string // random, names the session for logout
	expires       time.Time
	cookie        string // the cookie's value, which the CSRF token is derived from

	username string     // the user's current name, read by uiPage
	form     url.Values // a POST's form, checked and read by uiPage
}

// sign returns the HMAC-SHA256 of the parts under the UI's key, base64url.
func (u *webUI) sign(parts ...string) string {
	m := hmac.New(sha256.New, u.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession returns the cookie of a new session of userID in realm,
// valid for sessionLifetime from now: HttpOnly, SameSite=Strict, Secure
// when secure, scoped to the realm's pages.
func (u *webUI) newSession(realm, userID string, now time.Time, secure bool) *http.Cookie {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := base64.RawURLEncoding.EncodeToString(b[:])
	exp := now.Add(sessionLifetime)
	payload := strings.Join([]string{
		base64.RawURLEncoding.EncodeToString([]byte(realm)),
		base64.RawURLEncoding.EncodeToString([]byte(userID)),
		strconv.FormatInt(exp.Unix(), 10),
		id,
	}, ".")
	c := u.cookie(realm, payload+"."+u.sign("session", payload), secure)
	c.MaxAge = int(sessionLifetime / time.Second)
	return c
}

// clearCookie returns the cookie that deletes realm's session cookie.
func (u *webUI) clearCookie(realm string, secure bool) *http.Cookie {
	c := u.cookie(realm, "", secure)
	c.MaxAge = -1
	return c
}

func (u *webUI) cookie(realm, value string, secure bool) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: value, Path: uiRealmPath(realm),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure}
}

// session returns the request's session of realm: its cookie signed by
// this server, of this realm, not expired by now and not logged out.
func (u *webUI) session(r *http.Request, realm string, now time.Time) (*uiSession, bool) {
	for _, c := range r.CookiesNamed(sessionCookie) {
		if ss, ok := u.parse(c.Value, realm, now); ok {
			return ss, true
		}
	}
	return nil, false
}

func (u *webUI) parse(value, realm string, now time.Time) (*uiSession, bool) {
	payload, mac, ok := cutLast(value, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(u.sign("session", payload))) {
		return nil, false
	}
	parts := strings.Split(payload, ".")
	if len(parts) != 4 {
		return nil, false
	}
	rb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	ub, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	exp, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || string(rb) != realm {
		return nil, false
	}
	ss := &uiSession{realm: realm, userID: string(ub), id: parts[3], expires: time.Unix(exp, 0), cookie: value}
	if !now.Before(ss.expires) || u.loggedOut.revoked(realm, ss.id, ss.expires) {
		return nil, false
	}
	return ss, true
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// csrfToken is the CSRF token of ss's forms: derived from the session's
// cookie under the UI's key, so that only a page of the session knows it.
func (u *webUI) csrfToken(ss *uiSession) string { return u.sign("csrf", ss.cookie) }

// csrfValid reports whether token is ss's CSRF token.
func (u *webUI) csrfValid(ss *uiSession, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(u.csrfToken(ss)))
}

// logout refuses ss from now until it expires.
func (u *webUI) logout(ss *uiSession, now time.Time) {
	u.loggedOut.revoke(ss.realm, ss.id, ss.expires, now)
}
