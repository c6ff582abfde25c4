package mockserver

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// identityRoutes registers discovery (OpenID Connect and RFC 8414), JWKS,
// the token endpoint, userinfo (userinfo.go), revocation (revoke.go) and
// introspection (introspect.go). All of them are extensions of the service
// specification, which leaves token issuance to the identity provider.
func (s *Server) identityRoutes(m mux) {
	m.HandleFunc("GET /realms/{realm}/.well-known/openid-configuration", s.live(s.apiFail, s.discovery))
	m.HandleFunc("GET /.well-known/oauth-authorization-server/realms/{realm}", s.live(s.apiFail, s.authServerMetadata))
	m.HandleFunc("GET /realms/{realm}/protocol/openid-connect/certs", s.certs)
	m.HandleFunc("POST /realms/{realm}/protocol/openid-connect/token", s.token)
	m.Handle("GET /realms/{realm}/protocol/openid-connect/userinfo", s.authenticated(s.userinfo))
	m.Handle("POST /realms/{realm}/protocol/openid-connect/userinfo", s.authenticated(s.userinfo))
	m.HandleFunc("POST /realms/{realm}/protocol/openid-connect/revoke", s.live(s.apiFail, s.revoke))
	m.HandleFunc("POST /realms/{realm}/protocol/openid-connect/token/introspect", s.live(s.apiFail, s.introspect))
}

// liveRealm runs fn on the named realm when it exists and is not
// decommissioned, else returns a 404.
func (s *Server) liveRealm(name string, fn func(r *store.Realm) error) error {
	return s.store.Read(name, func(r *store.Realm) error {
		if r.Decommissioned() {
			return store.NotFound("realm %q", name)
		}
		return fn(r)
	})
}

// lookupLive returns the named realm without taking its lock, when it
// exists and is not decommissioned, else a 404. Only the fields that never
// change may be read from it (see store.Store.Lookup).
func (s *Server) lookupLive(name string) (*store.Realm, error) {
	rm, ok := s.store.Lookup(name)
	if !ok || rm.Decommissioned() {
		return nil, store.NotFound("realm %q", name)
	}
	return rm, nil
}

// live serves h on a route of a realm, the realm named in the path, when
// the realm exists and is not decommissioned; otherwise fail answers the
// 404 (s.apiFail, or the web UI's uiError).
func (s *Server) live(fail func(http.ResponseWriter, *http.Request, error), h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		realm := r.PathValue("realm")
		if _, err := s.lookupLive(realm); err != nil {
			fail(w, r, err)
			return
		}
		h(w, r, realm)
	}
}

// apiFail answers err as the API does (writeErr), for live.
func (s *Server) apiFail(w http.ResponseWriter, _ *http.Request, err error) { s.writeErr(w, err) }

// serverMetadata is the metadata of a realm: RFC 8414 authorization server
// metadata, and with the OpenID fields set, OpenID Provider Metadata
// (OpenID Connect Discovery 1.0 section 3). Every endpoint it names answers
// and every value it lists works: the authorization endpoint serves the
// code flow only (response type code, query response mode, PKCE with S256).
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	JWKSURI                           string   `json:"jwks_uri"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	RevocationAuthMethodsSupported    []string `json:"revocation_endpoint_auth_methods_supported"`
	IntrospectionEndpoint             string   `json:"introspection_endpoint"`
	IntrospectionAuthMethodsSupported []string `json:"introspection_endpoint_auth_methods_supported"`
	ScopesSupported                   []string `json:"scopes_supported"`
	DPoPSigningAlgValuesSupported     []string `json:"dpop_signing_alg_values_supported"`
	// Always false, said rather than left out: OpenID Connect Discovery
	// 1.0 section 3 makes an absent request_uri_parameter_supported true.
	// The authorization endpoint refuses these parameters
	// (refusedAuthParams).
	RequestParameterSupported    bool `json:"request_parameter_supported"`
	RequestURIParameterSupported bool `json:"request_uri_parameter_supported"`
	ClaimsParameterSupported     bool `json:"claims_parameter_supported"`

	// OpenID Provider Metadata only.
	UserinfoEndpoint                 string   `json:"userinfo_endpoint,omitempty"`
	SubjectTypesSupported            []string `json:"subject_types_supported,omitempty"`
	IDTokenSigningAlgValuesSupported []string `json:"id_token_signing_alg_values_supported,omitempty"`
	ClaimsSupported                  []string `json:"claims_supported,omitempty"`
}

// Scopes the token endpoint grants: openid asks for an ID token (password
// and authorization code grants only); profile and email name claims every ID token carries.
var supportedScopes = []string{"openid", "profile", "email"}

// metadata builds the RFC 8414 metadata of realm as the request sees the
// server.
func (s *Server) metadata(r *http.Request, realm string) serverMetadata {
	iss := issuer.RealmIssuer(s.issuerBase(r), realm)
	oidc := iss + "/protocol/openid-connect"
	return serverMetadata{
		Issuer:                            iss,
		AuthorizationEndpoint:             oidc + "/auth",
		TokenEndpoint:                     oidc + "/token",
		JWKSURI:                           oidc + "/certs",
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               []string{grantAuthorizationCode, grantClientCredentials, grantPassword},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"client_secret_basic", "client_secret_post", "none"},
		RevocationEndpoint:                oidc + "/revoke",
		RevocationAuthMethodsSupported:    []string{"client_secret_basic", "client_secret_post", "none"},
		IntrospectionEndpoint:             oidc + "/token/introspect",
		// A public client may not introspect (as Keycloak).
		IntrospectionAuthMethodsSupported: []string{"client_secret_basic", "client_secret_post"},
		ScopesSupported:                   supportedScopes,
		DPoPSigningAlgValuesSupported:     s.auth.dpop.Algorithms(),
	}
}

// discovery serves the OpenID Provider Metadata of a realm.
func (s *Server) discovery(w http.ResponseWriter, r *http.Request, realm string) {
	doc := s.metadata(r, realm)
	doc.UserinfoEndpoint = doc.Issuer + "/protocol/openid-connect/userinfo"
	doc.SubjectTypesSupported = []string{"public"}
	doc.IDTokenSigningAlgValuesSupported = s.signingAlgorithms()
	doc.ClaimsSupported = []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "azp", "preferred_username", "email"}
	writeJSON(w, http.StatusOK, doc)
}

// authServerMetadata serves the RFC 8414 metadata of a realm, at the path
// RFC 8414 section 3.1 derives from the issuer
// (/.well-known/oauth-authorization-server/realms/{realm}).
func (s *Server) authServerMetadata(w http.ResponseWriter, r *http.Request, realm string) {
	writeJSON(w, http.StatusOK, s.metadata(r, realm))
}

// certs serves the realm's JWKS: every key its tokens are signed with, each
// with its alg and kid (publicKeys).
func (s *Server) certs(w http.ResponseWriter, r *http.Request) {
	rm, err := s.lookupLive(r.PathValue("realm"))
	if err != nil {
		s.writeErr(w, err)
		return
	}
	set, err := s.publicKeys(rm)
	if err != nil {
		s.writeErr(w, err)
		return
	}
	b, err := json.Marshal(set)
	if err != nil {
		s.writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// Grant types of the token endpoint.
const (
	grantClientCredentials = "client_credentials"
	grantPassword          = "password"
)

// oauthError is an RFC 6749 section 5.2 error answer.
type oauthError struct {
	status      int
	code        string
	description string
	basic       bool // the client authenticated with HTTP Basic: challenge it
}

func (e *oauthError) Error() string { return e.code + ": " + e.description }

// oauthErrorf returns the OAuth error of status and code whose description
// is format, a constant, with args quoted as errf quotes them (quoteArgs):
// so sayable, which writeOAuthError applies, sees each of them and repeats
// a caller's value -- a parameter's name too -- only when the server knows
// it (a word of the API, a registered OAuth parameter's name: apiWords), a
// rule by the value, not by its shape (a-fix14 F1: a passphrase of
// lower-case letters and '_' sent where a parameter's name goes came
// back). Server text goes through said, listed in saidSources.
// TestOnlyTheServersTextIsSaid fails on a description that is neither a
// constant nor built here.
func oauthErrorf(status int, code, format string, args ...any) *oauthError {
	return &oauthError{status: status, code: code, description: fmt.Sprintf(format, quoteArgs(args)...)}
}

// writeOAuthAnswer answers err: an *oauthError as RFC 6749 section 5.2 says
// (a Basic challenge when a client that authenticated with HTTP Basic
// failed), anything else as the service's error body.
func (s *Server) writeOAuthAnswer(w http.ResponseWriter, realm string, err error) {
	var oe *oauthError
	if !errors.As(err, &oe) {
		s.writeErr(w, err)
		return
	}
	if oe.basic && oe.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Basic "+challengeRealm(realm, s.publicName))
	}
	w.Header().Set("Cache-Control", "no-store")
	s.writeOAuthError(w, oe)
}

// tokenResponse is an RFC 6749 section 5.1 answer, with the ID token of
// OpenID Connect Core 1.0 section 3.1.3.3 when openid was granted.
type tokenResponse struct {
	AccessToken string  `json:"access_token"`
	TokenType   string  `json:"token_type"`
	ExpiresIn   int     `json:"expires_in"`
	IDToken     string  `json:"id_token,omitempty"`
	Scope       *string `json:"scope,omitempty"`
}

// token serves the token endpoint: authorization_code (authcode.go),
// client_credentials and password grants,
// with client authentication by HTTP Basic or form parameters, and DPoP
// binding when the request carries a valid proof.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	realm := r.PathValue("realm")
	if err := s.liveRealm(realm, func(*store.Realm) error { return nil }); err != nil {
		s.writeErr(w, err)
		return
	}
	tok, err := s.grant(w, r, realm)
	if err != nil {
		s.writeOAuthAnswer(w, realm, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, tok)
}

// refusedTokenParams are the parameters of a token request that would
// bind the token but that the server does not support: a request with any
// of them is refused (as refusedAuthParams at the authorization
// endpoint), before anything is checked or spent, rather than answered
// with a token that honours none of it.
var refusedTokenParams = []struct{ name, code, desc string }{
	{"resource", "invalid_request", "the resource parameter (resource indicators, RFC 8707) is not supported: tokens are not restricted to a resource"},
	{"authorization_details", "invalid_request", "the authorization_details parameter (RFC 9396) is not supported"},
}

// grant authenticates the client and the user of a token request and mints
// the token.
func (s *Server) grant(w http.ResponseWriter, r *http.Request, realm string) (*tokenResponse, error) {
	form, oe := readOAuthForm(w, r)
	if oe != nil {
		return nil, oe
	}
	grantType := form.Get("grant_type")
	switch grantType {
	case "":
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "missing grant_type"}
	case grantClientCredentials, grantPassword, grantAuthorizationCode:
	default:
		return nil, &oauthError{status: http.StatusBadRequest, code: "unsupported_grant_type", description: "unsupported grant_type: the token endpoint takes authorization_code, client_credentials or password"}
	}

	for _, rp := range refusedTokenParams {
		if form.Has(rp.name) {
			return nil, oauthErrorf(http.StatusBadRequest, rp.code, "%s", said(rp.desc))
		}
	}
	clientID, secret, basic, oe := clientCredentials(r)
	if oe != nil {
		return nil, oe
	}
	badClient := &oauthError{status: http.StatusUnauthorized, code: "invalid_client", description: "invalid client or client credentials", basic: basic}
	spec := tokenSpec{clientID: clientID}
	var proof *dpop.Result
	if grantType == grantAuthorizationCode && sendsProof(r) {
		// Checked before the code's checks (a client told to retry with
		// the server's DPoP nonce must still hold a code to retry with),
		// but recorded only once the client and code are.
		if proof, oe = s.checkTokenProof(w, r, realm); oe != nil {
			return nil, oe
		}
	}
	var (
		username string
		code     *authCode
		spend    *codeSpend // the code to spend once nothing else can refuse (spendCode)
	)
	err := s.liveRealm(realm, func(rm *store.Realm) error {
		c, ok := checkClient(rm, clientID, secret)
		if !ok {
			return badClient
		}
		noteCORSClient(r, realm, clientID)
		switch grantType {
		case grantClientCredentials:
			if c.Public || c.ServiceAccountUserID == "" {
				return &oauthError{status: http.StatusBadRequest, code: "unauthorized_client", description: "a public client has no service account"}
			}
			username = rm.Users[c.ServiceAccountUserID].Username
		case grantPassword:
			name, pw := form.Get("username"), form.Get("password")
			if name == "" || pw == "" {
				return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "username and password are required"}
			}
			u, ok := rm.UserNamed(name)
			if !ok || u.ServiceAccountOf != "" || u.Password == "" ||
				subtle.ConstantTimeCompare([]byte(pw), []byte(u.Password)) != 1 {
				return &oauthError{status: http.StatusBadRequest, code: "invalid_grant", description: "invalid user credentials"}
			}
			username = u.Username
		case grantAuthorizationCode:
			var oe *oauthError
			jkt := ""
			if proof != nil {
				jkt = proof.Thumbprint
			}
			if code, spend, oe = s.redeemCode(rm, form, clientID, jkt); oe != nil {
				return oe
			}
			username = code.username
		}
		return nil
	})
	if err != nil {
		return nil, err // a code refused here is not spent
	}

	if proof == nil && sendsProof(r) {
		if proof, oe = s.checkTokenProof(w, r, realm); oe != nil {
			return nil, oe
		}
	}
	if proof != nil { // the client, and the user or code, are authenticated
		if oe := s.recordTokenProof(w, r, realm, proof); oe != nil {
			return nil, oe // a code is still unspent: the client retries with a fresh proof
		}
		spec.jkt = proof.Thumbprint
	}
	if spend != nil {
		// The last step that can refuse a code's redemption: exactly one
		// redemption of a code spends it and gets its token (codeTokenID:
		// a reuse revokes it); every other is invalid_grant.
		spend.writer = s.codeRedeemer(spend, clientID, secret, form, spec.jkt)
		if oe := s.spendCode(r.Context(), w, spend, clientID); oe != nil {
			return nil, oe
		}
		spec = s.codeTokenSpec(spec, spend)
	}
	raw, claims, err := s.mint(s.issuerBase(r), realm, username, spec)
	if errors.Is(err, errPastExpiresBy) {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_grant", description: "the code has expired"}
	}
	if err != nil {
		return nil, err
	}
	if spend == nil { // a code's was asked before it was spent (spendCode)
		if oe := s.vouchedToken(r.Context(), w, realm, claims); oe != nil {
			return nil, oe
		}
	}
	tt := "Bearer"
	if spec.jkt != "" {
		tt = "DPoP"
	}
	out := &tokenResponse{AccessToken: raw, TokenType: tt, ExpiresIn: int(claims.Expiry.Time().Sub(claims.IssuedAt.Time()) / time.Second)}
	requested, scopeGiven := form["scope"]
	nonce, authTime := "", claims.IssuedAt.Time()
	if code != nil { // the scope and nonce of the authorization request
		requested, scopeGiven = []string{code.scope}, code.scopeGiven
		nonce, authTime = code.nonce, code.authTime
	}
	if scopeGiven {
		granted := grantedScopes(requested[0], grantType)
		out.Scope = &granted
		if slices.Contains(strings.Fields(granted), "openid") {
			if out.IDToken, err = s.idToken(realm, claims, nonce, authTime); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// redeemCode redeems the authorization code of a token request of
// clientID in realm rm: the code must have been issued in that realm to
// that client for that redirect_uri, not have expired, and the
// code_verifier must match its PKCE challenge (and be absent when it had
// none, so that PKCE cannot be downgraded), jkt, the thumbprint of the
// request's DPoP proof's key (empty without a proof), must be the one the
// code is bound to (dpop_jkt, RFC 9449 section 10) when it is bound, and
// the user must still be able to log in. Nothing is spent here: spend is what the caller spends
// (spendCode), once the realm's lock is released and everything else that
// can refuse the request has passed; a redemption refused here leaves the
// code as it was.
func (s *Server) redeemCode(rm *store.Realm, form url.Values, clientID, jkt string) (c *authCode, spend *codeSpend, oe *oauthError) {
	raw, redirectURI := form.Get("code"), form.Get("redirect_uri")
	if raw == "" || redirectURI == "" {
		return nil, nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "code and redirect_uri are required"}
	}
	bad := func(desc string) *oauthError {
		return oauthErrorf(http.StatusBadRequest, "invalid_grant", "%s", said(desc))
	}
	c, spend, ok := s.findCode(rm.Name, raw)
	if ok && !s.now().Before(c.expires) {
		return nil, nil, bad("the code has expired")
	}
	switch {
	case !ok || c.realm != rm.Name || c.clientID != clientID:
		return nil, nil, bad("the code is unknown, already used, or not issued to this client")
	case redirectURI != c.redirectURI:
		return nil, nil, bad("redirect_uri differs from the authorization request's")
	}
	verifier, hasVerifier := form["code_verifier"]
	switch {
	case c.challenge == "" && hasVerifier:
		return nil, nil, bad("code_verifier given but the authorization request had no code_challenge")
	case c.challenge != "" && !hasVerifier:
		return nil, nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "code_verifier is required"}
	case c.challenge != "" && !pkceMatches(verifier[0], c.challenge):
		return nil, nil, bad("code_verifier does not match the code_challenge")
	}
	switch {
	case c.jkt != "" && jkt == "":
		return nil, nil, bad("the code is bound to a DPoP key (dpop_jkt): redeem it with a DPoP proof signed by that key")
	case c.jkt != "" && subtle.ConstantTimeCompare([]byte(jkt), []byte(c.jkt)) != 1:
		return nil, nil, bad("the DPoP proof's key is not the one the code is bound to (dpop_jkt)")
	}
	if u, ok := rm.UserNamed(c.username); !ok || u.Password == "" {
		return nil, nil, bad("the user can no longer log in")
	}
	return c, spend, nil
}

// grantedScopes returns the scopes of requested (space-separated) that the
// server grants: those of supportedScopes, openid only with the password
// and authorization code grants (an ID token is about a user who
// authenticated); others are left out, and the answer's scope says so
// (RFC 6749 section 5.1).
func grantedScopes(requested, grantType string) string {
	var out []string
	for _, sc := range strings.Fields(requested) {
		if slices.Contains(supportedScopes, sc) && !slices.Contains(out, sc) &&
			(sc != "openid" || grantType == grantPassword || grantType == grantAuthorizationCode) {
			out = append(out, sc)
		}
	}
	return strings.Join(out, " ")
}

// readOAuthForm reads the form body of a request to one of the OAuth
// endpoints (token, revoke, introspect), at most maxBody bytes, and refuses
// another Content-Type, a malformed body or a parameter given more than
// once (RFC 6749 section 3.1).
func readOAuthForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthError) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "the body must be application/x-www-form-urlencoded"}
	}
	if err := r.ParseForm(); err != nil {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "malformed form body"}
	}
	for name, values := range r.PostForm {
		if len(values) > 1 {
			return nil, oauthErrorf(http.StatusBadRequest, "invalid_request", "parameter %s is given more than once", name)
		}
	}
	return r.PostForm, nil
}

// checkClient returns the client of rm named clientID when secret is
// its secret; a public client needs none (it is identified, not
// authenticated, as Keycloak does). Read it under rm's lock.
func checkClient(rm *store.Realm, clientID, secret string) (*store.Client, bool) {
	c, ok := rm.ClientNamed(clientID)
	if !ok {
		return nil, false
	}
	if !c.Public && (secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(c.Secret)) != 1) {
		return nil, false
	}
	return c, true
}

// clientCredentials reads the client's id and secret from HTTP Basic
// (RFC 6749 section 2.3.1: each part form-encoded) or from the form. Both at
// once must agree.
func clientCredentials(r *http.Request) (id, secret string, basic bool, oe *oauthError) {
	formID, formSecret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		var err1, err2 error
		id, err1 = url.QueryUnescape(u)
		secret, err2 = url.QueryUnescape(p)
		if err1 != nil || err2 != nil || (formID != "" && formID != id) {
			return "", "", true, &oauthError{status: http.StatusUnauthorized, code: "invalid_client", description: "malformed client credentials", basic: true}
		}
		return id, secret, true, nil
	}
	if formID == "" {
		return "", "", false, &oauthError{status: http.StatusUnauthorized, code: "invalid_client", description: "client_id is required"}
	}
	return formID, formSecret, false, nil
}

// sendsProof reports whether a token request carries a DPoP header line,
// empty or not: the proof is then checked over every line, as on every
// protected route (two lines are refused, an empty one too), never taken
// as absent because its first line is empty.
func sendsProof(r *http.Request) bool { return len(r.Header.Values("DPoP")) > 0 }
