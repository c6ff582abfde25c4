package mockserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// The authorization code flow (RFC 6749 section 4.1, with PKCE, RFC 7636,
// and OpenID Connect Core 1.0 section 3.1) is an extension: the service
// leaves user login to its identity provider. There is no session and no
// consent: every authorization request shows a minimal login form, whose
// POST to the same endpoint authenticates the user and redirects with the
// code. Tests drive it as a browser would, by posting the form.

const (
	grantAuthorizationCode = "authorization_code"

	// codeLifetime is how long an authorization code may be redeemed,
	// by the server's clock (RFC 6749 section 4.1.2 recommends at most
	// ten minutes).
	codeLifetime = 60 * time.Second
	// maxCodes bounds the codes one realm holds at once; expired ones,
	// and then spent ones, are dropped first. Each realm has its own: a
	// realm that fills its store refuses only its own sign-ins.
	maxCodes = 10000
	// maxCodesPerUser bounds the unredeemed codes of one user of a realm:
	// a newer code replaces the user's oldest, so that one user cannot
	// fill the realm's store.
	maxCodesPerUser = 32
	// maxAuthParam bounds each parameter of an authorization request, so
	// that what a code holds stays small.
	maxAuthParam = 2048
)

// authParams are the parameters of an authorization request that the
// login form carries along as hidden fields: each is checked (at most once,
// checkAuthRequest), and each that binds the code (scope, nonce,
// code_challenge, dpop_jkt) is kept in it (newAuthCode) and checked at its
// redemption. A parameter that would bind the request but is not
// supported is refused (refusedAuthParams), never carried nor dropped.
var authParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state", "nonce",
	"code_challenge", "code_challenge_method", "response_mode", "prompt", "login_hint", "dpop_jkt"}

// refusedAuthParams are the parameters of an authorization request that
// would bind what the code stands for, or where its parameters come from,
// but that the server does not support: a request with any of them is
// refused (redirected with the error code and description), so that no
// client takes a binding it asked for as granted. Parameters the server
// knows nothing of are ignored (RFC 6749 section 3.1); those that only
// shape the login page (display, ui_locales, claims_locales) or that the
// server may ignore (acr_values, voluntary) are too. max_age holds of
// every code: each sign-in authenticates the user afresh (auth_time).
var refusedAuthParams = []struct{ name, code, desc string }{
	// OpenID Connect Core 1.0 section 6 and RFC 9101 (JAR): the
	// parameters would come from a request object this server never reads.
	{"request", "request_not_supported", "the request parameter (request objects, RFC 9101) is not supported"},
	// Also RFC 9126 (PAR): this server has no pushed authorization
	// request endpoint.
	{"request_uri", "request_uri_not_supported", "the request_uri parameter (request objects, RFC 9101; pushed authorization requests, RFC 9126) is not supported"},
	{"claims", "invalid_request", "the claims parameter (OpenID Connect Core 1.0 section 5.5) is not supported"},
	{"resource", "invalid_request", "the resource parameter (resource indicators, RFC 8707) is not supported: tokens are not restricted to a resource"},
	{"authorization_details", "invalid_request", "the authorization_details parameter (RFC 9396) is not supported"},
	{"id_token_hint", "invalid_request", "the id_token_hint parameter is not supported: the login form signs in whoever authenticates"},
	{"registration", "registration_not_supported", "the registration parameter (OpenID Connect Core 1.0 section 7.2.1) is not supported"},
}

// authCode is what an authorization code stands for.
type authCode struct {
	realm, clientID, redirectURI string
	username                     string
	scope                        string // the requested scope, when scopeGiven
	scopeGiven                   bool
	nonce                        string
	challenge                    string // S256 code_challenge, or empty
	// jkt is the request's dpop_jkt (RFC 9449 section 10): the RFC 7638
	// thumbprint of the DPoP key whose proof alone redeems the code, or
	// empty.
	jkt               string
	authTime, expires time.Time
	// lifetime is the lifetime of the token the code issues, decided when
	// the code is issued (tokenLifetimeSeconds then) and carried by the
	// code: the token is minted with it and a reuse of the code revokes
	// the token for exactly as long as it can live (codeReused).
	lifetime time.Duration
	spent    bool // kept codes: redeemed (claim), kept until it expires
}

// codeStore holds the authorization codes kept in memory (without a
// shared store), by realm, until they expire: a redeemed one is marked
// spent (claim), so that its reuse is known. It is safe for concurrent
// use.
type codeStore struct {
	mu      sync.Mutex
	byRealm map[string]*realmCodes
}

// realmCodes are one realm's unredeemed codes, and each user's of them,
// oldest first: a user holds at most maxCodesPerUser, so that no one
// signed-in user can fill the realm's store and lock its other users out
// of signing in.
type realmCodes struct {
	codes  map[string]*authCode
	byUser map[string][]string
}

// add stores c under a new code and returns it; false when the realm's
// store is full of live codes. A user's code beyond maxCodesPerUser
// replaces that user's oldest.
func (cs *codeStore) add(now time.Time, c *authCode) (string, bool) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	code := base64.RawURLEncoding.EncodeToString(b[:])
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byRealm == nil {
		cs.byRealm = map[string]*realmCodes{}
	}
	rc := cs.byRealm[c.realm]
	if rc == nil {
		rc = &realmCodes{codes: map[string]*authCode{}, byUser: map[string][]string{}}
		cs.byRealm[c.realm] = rc
	}
	if mine := rc.byUser[c.username]; len(mine) >= maxCodesPerUser {
		rc.drop(mine[0])
	}
	if len(rc.codes) >= maxCodes {
		// Expired codes go first, then spent ones (their reuse is then
		// only unknown, still refused): the bound is on unredeemed codes.
		for k, v := range rc.codes {
			if !now.Before(v.expires) {
				rc.drop(k)
			}
		}
		for k, v := range rc.codes {
			if len(rc.codes) < maxCodes {
				break
			}
			if v.spent {
				rc.drop(k)
			}
		}
		if len(rc.codes) >= maxCodes {
			return "", false
		}
	}
	rc.codes[code] = c
	rc.byUser[c.username] = append(rc.byUser[c.username], code)
	return code, true
}

// peek returns a copy of what realm's code stands for, spent or not,
// without spending it: a redemption is checked first, and spent (claim)
// only once nothing but the code can refuse it. Another realm's code is
// not found.
func (cs *codeStore) peek(realm, code string) (*authCode, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	rc := cs.byRealm[realm]
	if rc == nil {
		return nil, false
	}
	c, ok := rc.codes[code]
	if !ok {
		return nil, false
	}
	cp := *c
	return &cp, true
}

// claim spends realm's code in one step under the store's lock and
// reports whether this call did: of any number of redemptions of one code
// (RFC 6749 section 4.1.2), concurrent or not, exactly one is true. The
// spent code is kept until it expires (or its user's newer codes push it
// out), so that a later redemption is known for a reuse and revokes what
// the first issued.
func (cs *codeStore) claim(realm, code string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	rc := cs.byRealm[realm]
	if rc == nil {
		return false
	}
	c, ok := rc.codes[code]
	if !ok || c.spent {
		return false
	}
	c.spent = true
	return true
}

// drop forgets code, if held, from the realm's codes and its user's.
func (rc *realmCodes) drop(code string) {
	c, ok := rc.codes[code]
	if !ok {
		return
	}
	delete(rc.codes, code)
	mine := rc.byUser[c.username]
	if i := slices.Index(mine, code); i >= 0 {
		mine = slices.Delete(mine, i, i+1)
	}
	if len(mine) == 0 {
		delete(rc.byUser, c.username)
	} else {
		rc.byUser[c.username] = mine
	}
}

// authorizeRoutes registers the authorization endpoint at Keycloak's path.
func (s *Server) authorizeRoutes(m mux) {
	m.HandleFunc("GET /realms/{realm}/protocol/openid-connect/auth", s.live(s.apiFail, s.authorization))
	m.HandleFunc("POST /realms/{realm}/protocol/openid-connect/auth", s.live(s.apiFail, s.authorization))
}

// authRequest is a validated authorization request.
type authRequest struct {
	params      url.Values // the authorization parameters, each given once
	clientID    string
	redirectURI string
	public      bool
}

// authorization serves the authorization endpoint: GET shows the login form of
// a valid request; POST of that form (the request's parameters and
// username and password) redirects to the client with a code. A request
// whose client or redirect_uri is not known is answered here with 400,
// never redirected; any other error is redirected to the client (RFC 6749
// section 4.1.2.1).
func (s *Server) authorization(w http.ResponseWriter, r *http.Request, realm string) {
	w.Header().Set("Cache-Control", "no-store")
	params, oe := authRequestParams(w, r)
	if oe != nil {
		s.writeOAuthError(w, oe)
		return
	}
	req, oe := s.authClient(realm, params)
	if oe != nil {
		s.writeOAuthError(w, oe)
		return
	}
	if oe := checkAuthRequest(req); oe != nil {
		s.redirectError(w, req, oe)
		return
	}
	if r.Method != http.MethodPost { // GET, or HEAD
		s.loginForm(w, r, realm, req, "")
		return
	}
	username, password := params.Get("username"), params.Get("password")
	var authTime time.Time
	err := s.liveRealm(realm, func(rm *store.Realm) error {
		if _, err := checkPassword(rm, username, password); err != nil {
			return err
		}
		authTime = s.now()
		return nil
	})
	if errors.Is(err, errBadLogin) {
		s.loginForm(w, r, realm, req, "Invalid username or password.")
		return
	}
	if err != nil {
		s.writeErr(w, err)
		return
	}
	c := newAuthCode(realm, req, username, authTime, time.Duration(s.store.Config().TokenLifetimeSeconds)*time.Second)
	// The code's token is stamped (iat) in whole seconds, no earlier than
	// authTime's: the store is asked about the earliest stamp the token
	// can carry, so that no code is issued whose token it would refuse.
	if ir := s.issueRefusal(r.Context(), realm, "", authTime.Truncate(time.Second)); ir != nil {
		s.redirectError(w, req, oauthErrorf(http.StatusServiceUnavailable, "temporarily_unavailable", "%s", said(ir.message)))
		return
	}
	code, ok := s.issueCode(c)
	if !ok {
		s.redirectError(w, req, &oauthError{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", description: "too many unredeemed authorization codes; retry shortly"})
		return
	}
	redirect(w, req, url.Values{"code": {code}})
}

// newAuthCode returns what the code of req, valid (checkAuthRequest),
// stands for once username signed in at authTime: its realm, client,
// redirect URI and user, and every parameter that binds its redemption
// (scope, nonce, code_challenge, dpop_jkt), and the lifetime of its token.
func newAuthCode(realm string, req *authRequest, username string, authTime time.Time, lifetime time.Duration) *authCode {
	scope, scopeGiven := req.params["scope"]
	c := &authCode{realm: realm, clientID: req.clientID, redirectURI: req.redirectURI, username: username,
		scopeGiven: scopeGiven, nonce: req.params.Get("nonce"), challenge: req.params.Get("code_challenge"),
		jkt: req.params.Get("dpop_jkt"), authTime: authTime, expires: authTime.Add(codeLifetime), lifetime: lifetime}
	if scopeGiven {
		c.scope = scope[0]
	}
	return c
}

// errBadLogin is a failed login in the form.
var errBadLogin = errors.New("invalid username or password")

// checkPassword returns the user of rm that username and password sign in
// as, or errBadLogin: the one password check of every login form (the
// authorization endpoint's and the web UI's). A service account, a user
// without a password and an empty password never sign in.
func checkPassword(rm *store.Realm, username, password string) (*store.User, error) {
	u, ok := rm.UserNamed(username)
	if !ok || u.ServiceAccountOf != "" || u.Password == "" || password == "" ||
		subtle.ConstantTimeCompare([]byte(password), []byte(u.Password)) != 1 {
		return nil, errBadLogin
	}
	return u, nil
}

// authRequestParams reads the parameters of an authorization request: the
// query of a GET, the form body of a POST (its query is ignored). It
// refuses a malformed body or query, and parameters over maxAuthParam.
func authRequestParams(w http.ResponseWriter, r *http.Request) (url.Values, *oauthError) {
	raw := r.URL.RawQuery
	if r.Method == http.MethodPost {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
			return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "the body must be application/x-www-form-urlencoded"}
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "the body is too large or unreadable"}
		}
		raw = string(b)
	}
	params, err := url.ParseQuery(raw)
	if err != nil {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "malformed parameters"}
	}
	for name, values := range params {
		for _, v := range values {
			if len(v) > maxAuthParam {
				return nil, oauthErrorf(http.StatusBadRequest, "invalid_request", "parameter %s is too long", name)
			}
		}
	}
	return params, nil
}

// authClient finds the client and checks the redirect URI of an
// authorization request: what must hold before an error may be redirected.
func (s *Server) authClient(realm string, params url.Values) (*authRequest, *oauthError) {
	for _, name := range []string{"client_id", "redirect_uri"} {
		switch len(params[name]) {
		case 0:
			return nil, oauthErrorf(http.StatusBadRequest, "invalid_request", "missing %s", name)
		case 1:
		default:
			return nil, oauthErrorf(http.StatusBadRequest, "invalid_request", "parameter %s is given more than once", name)
		}
	}
	req := &authRequest{params: params, clientID: params.Get("client_id"), redirectURI: params.Get("redirect_uri")}
	var known, registered bool
	_ = s.liveRealm(realm, func(rm *store.Realm) error {
		c, ok := rm.ClientNamed(req.clientID)
		if ok {
			known, req.public = true, c.Public
			registered = slices.Contains(c.RedirectURIs, req.redirectURI)
		}
		return nil
	})
	if !known {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_client", description: "unknown client_id"}
	}
	if !registered {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "redirect_uri is not registered for this client"}
	}
	return req, nil
}

// checkAuthRequest returns the RFC 6749 error of a request whose client and
// redirect URI are valid (its status is not used: it is redirected), or nil
// when it is valid.
func checkAuthRequest(req *authRequest) *oauthError {
	p := req.params
	for _, name := range authParams {
		if len(p[name]) > 1 {
			return oauthErrorf(http.StatusBadRequest, "invalid_request", "parameter %s is given more than once", name)
		}
	}
	switch rt, ok := p["response_type"]; {
	case !ok:
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "missing response_type"}
	case rt[0] != "code":
		return &oauthError{status: http.StatusBadRequest, code: "unsupported_response_type", description: "only response_type=code is supported"}
	}
	if rm, ok := p["response_mode"]; ok && rm[0] != "query" {
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "only response_mode=query is supported"}
	}
	for _, rp := range refusedAuthParams {
		if p.Has(rp.name) {
			return oauthErrorf(http.StatusBadRequest, rp.code, "%s", said(rp.desc))
		}
	}
	if jkt, ok := p["dpop_jkt"]; ok && !thumbprintString(jkt[0]) {
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "dpop_jkt must be the base64url (unpadded) SHA-256 JWK thumbprint of the DPoP key (RFC 9449 section 10): 43 characters"}
	}
	challenge, hasChallenge := p["code_challenge"]
	method, hasMethod := p["code_challenge_method"]
	switch {
	case hasMethod && method[0] != "S256":
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "only code_challenge_method=S256 is supported"}
	case hasMethod && !hasChallenge:
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "code_challenge_method without code_challenge"}
	case hasChallenge && !hasMethod:
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "code_challenge_method=S256 is required (plain is not supported)"}
	case hasChallenge && !pkceString(challenge[0]):
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]"}
	case !hasChallenge && req.public:
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "a public client must use PKCE (code_challenge with code_challenge_method=S256)"}
	}
	if slices.Contains(strings.Fields(p.Get("prompt")), "none") {
		return &oauthError{status: http.StatusBadRequest, code: "login_required", description: "the server keeps no login session: prompt=none cannot succeed"}
	}
	return nil
}

// pkceString reports whether s is a valid code verifier or challenge
// (RFC 7636 section 4.1): 43 to 128 unreserved characters.
func pkceString(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// thumbprintString reports whether s is a base64url SHA-256 JWK
// thumbprint (RFC 7638) as RFC 9449 writes it: 32 bytes, unpadded, in its
// one canonical spelling of 43 characters (so that it equals the
// thumbprint of the key's proofs, compared as strings).
func thumbprintString(s string) bool {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

// pkceMatches reports whether verifier is the S256 code verifier of
// challenge.
func pkceMatches(verifier, challenge string) bool {
	if !pkceString(verifier) {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

// redirect answers 302 to the request's redirect URI with values and the
// request's state added to its query.
func redirect(w http.ResponseWriter, req *authRequest, values url.Values) {
	if st, ok := req.params["state"]; ok && len(st) == 1 {
		values.Set("state", st[0])
	}
	sep := "?"
	if strings.Contains(req.redirectURI, "?") {
		sep = "&"
	}
	w.Header().Set("Location", req.redirectURI+sep+values.Encode())
	w.WriteHeader(http.StatusFound)
}

// redirectError redirects oe, an RFC 6749 section 4.1.2.1 error, to the
// client (its status is not used: the answer is a redirect).
func (s *Server) redirectError(w http.ResponseWriter, req *authRequest, oe *oauthError) {
	redirect(w, req, url.Values{"error": {oe.code}, "error_description": {strings.Map(rfc6749Description, sayable(oe.description, s.publicName))}})
}

// writeOAuthError answers an error that cannot be redirected.
func (s *Server) writeOAuthError(w http.ResponseWriter, oe *oauthError) {
	writeJSON(w, oe.status, map[string]string{"error": oe.code, "error_description": strings.Map(rfc6749Description, sayable(oe.description, s.publicName))})
}

// rfc6749Description maps a rune of an error description onto what RFC
// 6749 section 5.2 allows there, printable ASCII without the double quote
// and the backslash: a double quote to an apostrophe, anything else it
// does not allow to '?'. Both writers of OAuth errors map through it.
func rfc6749Description(c rune) rune {
	switch {
	case c == '"':
		return '\''
	case c < 0x20 || c > 0x7e || c == '\\':
		return '?'
	}
	return c
}

// loginPage is the login form. It posts the authorization parameters back
// as hidden fields with the user's name and password.
var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign in to {{.Realm}}</title></head>
<body>
<h1>Sign in to {{.Realm}}</h1>
{{if .Error}}<p id="error" role="alert">{{.Error}}</p>
{{end}}<form id="login" method="post" action="{{.Action}}">
{{range .Hidden}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}<label>Username <input name="username" value="{{.Username}}" autocomplete="username" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
</body>
</html>
`))

type hiddenField struct{ Name, Value string }

// loginData is what the login form shows.
type loginData struct {
	Realm, Action, Error, Username string
	Hidden                         []hiddenField
}

// loginForm renders the login form of req, with msg when a login failed.
func (s *Server) loginForm(w http.ResponseWriter, r *http.Request, realm string, req *authRequest, msg string) {
	data := loginData{Realm: realm, Action: issuer.RealmIssuer(s.issuerBase(r), realm) + "/protocol/openid-connect/auth", Error: msg}
	for _, name := range authParams {
		if v, ok := req.params[name]; ok {
			data.Hidden = append(data.Hidden, hiddenField{name, v[0]})
		}
	}
	data.Username = req.params.Get("username")
	if data.Username == "" {
		data.Username = req.params.Get("login_hint")
	}
	writeLoginPage(w, http.StatusOK, data)
}

// writeLoginPage answers status with the login form showing data, with
// headers that keep it out of frames and other origins' reach.
func writeLoginPage(w http.ResponseWriter, status int, data loginData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_ = loginPage.Execute(w, data)
}
