package mockserver

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// This file is the authentication seam: token validation, permission checks
// and audit recording wrap every protected handler.

// caller is the authenticated subject of a request.
type caller struct {
	realm    string // realm whose token this is
	subject  string // the token's sub: a user id or a service-account user id
	username string // preferred_username
	clientID string // azp
	org      string // the token's organization claim, "" when absent

	// resourceID is set by a mutating handler to the id it created or
	// changed; the audit entry records it.
	resourceID string
	// tenantID, when a handler sets it, replaces the audit entry's tenant
	// (the token realm's tenant id or name); tenant provisioning sets it to
	// the new tenant.
	tenantID string

	claims *issuer.Claims
	rm     *store.Realm // the store's realm of the token (store.ReadRealm)
}

// handlerFunc is a handler that runs after authentication.
type handlerFunc func(w http.ResponseWriter, r *http.Request, c *caller)

// answered adapts a handler that returns the body of its 200 answer, or
// the error to answer instead (writeErr), to a handlerFunc.
func (s *Server) answered(h func(r *http.Request, c *caller) (any, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, c *caller) {
		v, err := h(r, c)
		if err != nil {
			s.writeErrFor(w, c, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// realmAdmin protects an organization endpoint: a valid token of the path's
// {realm} (401 otherwise) holding realm management (403 otherwise). A
// non-empty action marks a mutating call, recorded in the audit log with the
// handler's outcome.
func (s *Server) realmAdmin(action string, h handlerFunc) http.Handler {
	return s.protect(pathRealm, hasRealmManagement, "realm management (realm-admin or realm-management/manage-realm)", action, h)
}

// platformAdmin protects a platform-administration endpoint: a valid master
// realm token holding platform-admin.
func (s *Server) platformAdmin(action string, h handlerFunc) http.Handler {
	return s.protect(masterRealm, hasPlatformAdmin, "the platform-admin role", action, h)
}

// authenticated protects a decision endpoint: any valid token of the path's
// {realm}.
func (s *Server) authenticated(h handlerFunc) http.Handler {
	return s.protect(pathRealm, nil, "", "", h)
}

func pathRealm(r *http.Request) string { return r.PathValue("realm") }
func masterRealm(*http.Request) string { return store.MasterRealm }

func hasRealmManagement(c *issuer.Claims) bool {
	return c.HasRealmRole(store.RoleRealmAdmin) || c.HasClientRole(realmManagementClient, manageRealmRole)
}

func hasPlatformAdmin(c *issuer.Claims) bool { return c.HasRealmRole(store.RolePlatformAdmin) }

// Keycloak's client role that grants realm management.
const (
	realmManagementClient = "realm-management"
	manageRealmRole       = "manage-realm"
)

// protect authenticates against the realm realmOf names, checks the
// permission allowed (nil: any valid token), runs h and, for a non-empty
// action, records the outcome in the audit log (403s included).
func (s *Server) protect(realmOf func(*http.Request) string, allowed func(*issuer.Claims) bool, need, action string, h handlerFunc) http.Handler {
	serve := s.protectIn(allowed, need, action, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(w, r, realmOf(r)) })
}

// authenticatedIn is authenticated for a route that passes the realm
// itself (mux.HandleDirect).
func (s *Server) authenticatedIn(h handlerFunc) func(http.ResponseWriter, *http.Request, string) {
	return s.protectIn(nil, "", "", h)
}

// protectIn is protect against the realm it is given.
func (s *Server) protectIn(allowed func(*issuer.Claims) bool, need, action string, h handlerFunc) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, realm string) {
		c, fail := s.authenticate(w, r, realm)
		if fail != nil {
			s.refuse(w, realm, fail)
			return
		}
		if action == "" {
			if allowed != nil && !allowed(c.claims) {
				s.writeErr(w, errf(http.StatusForbidden, "the token lacks %s", said(need)))
				return
			}
			h(w, r, c)
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		if allowed != nil && !allowed(c.claims) {
			s.writeErr(rec, errf(http.StatusForbidden, "the token lacks %s", said(need)))
		} else {
			h(rec, r, c)
		}
		s.recordAudit(c, action, rec.status)
	}
}

// authFailure is a refused token: the challenge error code and the message.
type authFailure struct {
	code    string // invalid_token, or "" when no credentials came
	message string
	dpop    bool // challenge with the DPoP scheme rather than Bearer

	challenge string // a complete DPoP challenge from the proof verifier
	nonce     string // the DPoP-Nonce to send with a use_dpop_nonce challenge

	// unavailable marks a refusal that is the server's capacity, not the
	// credentials' fault: a 503 with Retry-After, no challenge.
	unavailable bool
	retryAfter  string // the Retry-After of an unavailable refusal, seconds; proofRetryAfter when empty
}

// refuse answers 401 with the challenge of f and the error body. A request
// without usable credentials gets both challenges, Bearer and DPoP with the
// proof algorithms (RFC 9449 section 7.1), so that a client learns it may
// use either.
func (s *Server) refuse(w http.ResponseWriter, realm string, f *authFailure) {
	if f.unavailable {
		retryAfter := f.retryAfter
		if retryAfter == "" {
			retryAfter = proofRetryAfter
		}
		w.Header().Set("Retry-After", retryAfter)
		s.writeErr(w, errf(http.StatusServiceUnavailable, "%s", said(f.message)))
		return
	}
	algs := fmt.Sprintf("algs=%q", strings.Join(s.auth.dpop.Algorithms(), " "))
	if f.code == "" && f.challenge == "" {
		w.Header().Add("WWW-Authenticate", "Bearer "+challengeRealm(realm, s.publicName))
		w.Header().Add("WWW-Authenticate", "DPoP "+challengeRealm(realm, s.publicName)+", "+algs)
		s.writeErr(w, errf(http.StatusUnauthorized, "%s", said(f.message)))
		return
	}
	ch := f.challenge
	if ch == "" {
		scheme := "Bearer"
		if f.dpop {
			scheme = "DPoP"
		}
		ch = scheme + " " + challengeRealm(realm, s.publicName)
		if f.dpop {
			ch += ", " + algs
		}
		if f.code != "" {
			ch += fmt.Sprintf(", error=%q, error_description=%q", f.code, sayable(f.message, s.publicName))
		}
	}
	w.Header().Add("WWW-Authenticate", ch)
	if f.nonce != "" {
		w.Header().Set("DPoP-Nonce", f.nonce)
	}
	s.writeErr(w, errf(http.StatusUnauthorized, "%s", said(f.message)))
}

// authenticate validates the request's access token for realm and returns
// the caller.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, realm string) (*caller, *authFailure) {
	scheme, raw, ok := strings.Cut(headerValue(r.Header, "Authorization"), " ")
	raw = strings.TrimSpace(raw)
	if !ok || raw == "" {
		return nil, &authFailure{message: "an access token is required"}
	}
	isDPoP := ascii.EqualFold(scheme, "DPoP")
	if !isDPoP && !ascii.EqualFold(scheme, "Bearer") {
		return nil, &authFailure{message: "unsupported authorization scheme"}
	}
	claims, rm, remember, err := s.verifyToken(r, realm, raw)
	if errors.Is(err, errSharedUnavailable) {
		return nil, &authFailure{unavailable: true, message: err.Error()}
	}
	if err != nil {
		return nil, &authFailure{code: "invalid_token", message: "invalid token: " + err.Error(), dpop: isDPoP}
	}
	if fail := s.checkBinding(w, r, realm, raw, claims, isDPoP); fail != nil {
		return nil, fail
	}
	// Only now is the caller authenticated: a bound token sent without its
	// proof is remembered by no cache.
	remember()
	// A realm serving an authenticated caller paces other realms' writes
	// (store.Store.Serving); an anonymous request, a bad token or a bound
	// token without its proof never does.
	s.store.Serving(rm)
	noteCORSClient(r, realm, claims.AuthorizedParty)
	return &caller{realm: realm, subject: claims.Subject, username: claims.PreferredUsername,
		clientID: claims.AuthorizedParty, org: claims.Organization, claims: claims, rm: rm}, nil
}

// errRealmGone is the validation error for a missing or decommissioned realm.
var errRealmGone = errors.New("realm not found or decommissioned")

// verifyToken checks raw's signature by realm's current key, its issuer,
// its type (an access token), its exp and nbf, that it was not revoked
// (revocation.go) nor minted by a process whose refusals this one cannot
// see (boot.go), and that the realm is live and the very tenant the token
// names (boot.go), whose store entry it returns. Every route's token
// check is this one. Messages name the failed check without echoing the
// token. remember adds a token whose signature
// was checked to the verified-token cache; call it once the request is
// authenticated (its DPoP binding checked too).
func (s *Server) verifyToken(r *http.Request, realm, raw string) (c *issuer.Claims, rm *store.Realm, remember func(), err error) {
	// The realm's key never changes once it is installed: no lock is
	// taken, so no work in any realm delays a token check.
	rm, ok := s.store.Lookup(realm)
	if !ok || rm.Decommissioned() {
		return nil, nil, nil, errRealmGone
	}
	key, kid, ok := s.accessVerificationKey(rm)
	if !ok { // the realm has signed no token yet
		return nil, nil, nil, checkError{issuer.ErrKey}
	}
	base, now := s.issuerBase(r), s.now()
	c, ok = s.auth.verified.get(realm, raw, kid, base)
	if ok {
		if err := c.CheckTime(now); err != nil {
			return nil, nil, nil, checkError{err}
		}
	} else {
		if c, err = issuer.Verify(raw, key, kid, issuer.RealmIssuer(base, realm), now); err != nil {
			return nil, nil, nil, checkError{err}
		}
	}
	// Checked after the cache as well as after a signature check: a
	// verification remembered before a revocation does not outlive it.
	if s.auth.revoked.revoked(realm, c.ID, c.Expiry.Time()) {
		return nil, nil, nil, errRevoked
	}
	// A token minted by a process whose refusals this one cannot see (any
	// other process without a shared store; one without a store, when
	// this one has it) may have been revoked there, and is refused as
	// revoked (boot.go).
	if s.boot.refuses(c) {
		return nil, nil, nil, errRevoked
	}
	// A tenant's token names its incarnation: the realm of its name here
	// is another tenant (provisioned again after a decommission, a
	// restart, or by another process), or no tenant, and the token's own
	// tenant, which may be decommissioned, is not here (boot.go).
	if c.Tenant != rm.Incarnation() {
		return nil, nil, nil, errOtherTenant
	}
	// Replicas: a revocation answered by any of them is in the shared
	// store; a token whose state it cannot tell is refused (503).
	switch revoked, err := s.sharedRecorded(r.Context(), labelRevoked, realm, c.ID, issuedAt(c)); {
	case err != nil:
		return nil, nil, nil, err
	case revoked:
		return nil, nil, nil, errRevoked
	}
	if ok {
		return c, rm, func() {}, nil
	}
	claims := c // c itself, captured, would go to the heap on every call
	return c, rm, func() { s.auth.verified.add(realm, raw, kid, claims) }, nil
}

// errOtherTenant is the validation error for a token of another tenant of
// the realm's name (or of a tenant where the realm is none).
var errOtherTenant = errors.New("the token's tenant is gone: the realm of its name is another tenant; get a new token")

// errRevoked is the validation error for a revoked token.
var errRevoked = errors.New("token revoked")

// issuedAt returns c's iat, or the zero time when it has none (the shared
// store then vouches for nothing, and the token is refused).
func issuedAt(c *issuer.Claims) time.Time {
	if c.IssuedAt == nil {
		return time.Time{}
	}
	return c.IssuedAt.Time()
}

// checkError is a failed check of issuer.Verify, its message without the
// package's prefix; errors.Is sees the issuer's error.
type checkError struct{ err error }

func (e checkError) Error() string { return strings.TrimPrefix(e.err.Error(), "issuer: ") }
func (e checkError) Unwrap() error { return e.err }

// recordAudit appends the audit entry of a mutating call to the tenant it
// acted on (the caller's own unless the handler named another), in the
// part of that tenant's log for the caller's tenant and the call's outcome
// (store.RecordAudit): a refused call, or the tenant's own callers, cannot
// push out the platform's record of what it did to the tenant.
func (s *Server) recordAudit(c *caller, action string, status int) {
	outcome := store.OutcomeSuccess
	if status >= 400 {
		outcome = store.OutcomeFailure
	}
	resourceType, _, _ := strings.Cut(action, ".")
	by := c.realm
	if rm, ok := s.store.Lookup(c.realm); ok {
		by = rm.TenantID()
	}
	tenant := c.tenantID
	if tenant == "" {
		tenant = by
	}
	// The resource's id is the caller's, taken from the path or the body
	// before anything checked it: kept by the errors' rule (keep: an id
	// only while the caller's realm holds its object, a-fix14 F2, a-fix14d),
	// so that a credential sent where an id goes is not stored. The actor and the
	// tenant are the server's (a verified token's subject, a tenant's id,
	// which a handler sets only once the tenant exists), the action and
	// type its words: a resource that is that tenant (a decommissioned
	// one, whose realm the store no longer counts) is kept as the tenant
	// is.
	resourceID := keep(c.resourceID, s.callerKnows(c))
	if c.tenantID != "" && c.resourceID == c.tenantID {
		resourceID = c.tenantID
	}
	s.store.RecordAudit(by, store.AuditEntry{ActorID: c.subject, Action: action, TenantID: tenant,
		ResourceType: resourceType, ResourceID: resourceID, Outcome: outcome})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// authState holds the identity side's own state: the bootstrap admin
// secret, the compiled decision policies and the DPoP replay and nonce
// state.
type authState struct {
	adminSecret string
	pageKey     []byte // signs AuthZEN search page tokens (authzensearch.go); from the key seed
	codeKey     []byte // seals authorization codes with a shared store (authcode_sealed.go); from the key seed
	redeemerKey []byte // MACs who redeems a sealed code (codeRedeemer); from the key seed
	policies    decision.Cache
	subjects    decision.SubjectCache // the subjects of /authorize's decisions
	answers     *answerCache          // /authorize's answers (answercache.go)
	dpop        *dpop.Verifier        // algorithms and challenges; verifies no proof
	// proofs verifies DPoP proofs, one verifier (and so one replay cache)
	// per realm: a full replay cache shortens its window, so a shared one
	// would let a flood of proofs in one realm shorten every realm's.
	// Proofs are recorded only for authenticated callers (checkBinding
	// after the token, recordTokenProof after the client). proofOpts
	// configure them.
	proofs    *perRealm[*dpop.Verifier]
	proofOpts []dpop.Option
	nonces    dpop.Nonces
	verified  *verifiedTokens // tokens whose signature checked out (tokencache.go)
	revoked   *revokedTokens  // tokens revoked at the revocation endpoint (revocation.go)
	codes     codeStore       // unredeemed authorization codes (authcode.go)
}
