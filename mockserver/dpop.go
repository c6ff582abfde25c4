package mockserver

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
)

// This file binds tokens to DPoP keys (RFC 9449): proofs at the token
// endpoint, proofs on every protected route, and server nonces when the
// configuration asks for them (dpopNonceRequired).

// nonceLifetime is how long a nonce is the current one; the one before it
// stays valid for as long again, so a client racing a rotation is not
// refused twice.
const nonceLifetime = time.Minute

// nonceSource is the server's dpop.Nonces: one random nonce at a time,
// rotated by the server clock, required only while the configuration's
// dpopNonceRequired is set.
type nonceSource struct {
	now      func() time.Time
	required func() bool

	mu       sync.Mutex
	current  string
	previous string
	minted   time.Time
}

var _ dpop.Nonces = (*nonceSource)(nil)

// Valid accepts any proof while nonces are not required; otherwise only the
// current or the previous nonce.
func (n *nonceSource) Valid(_ context.Context, nonce string) bool {
	if !n.required() {
		return true
	}
	if nonce == "" {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rotate()
	return nonce == n.current || (n.previous != "" && nonce == n.previous)
}

// Next returns the current nonce, rotating it first when it is too old.
func (n *nonceSource) Next(context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rotate()
	return n.current, nil
}

func (n *nonceSource) rotate() {
	now := n.now()
	if n.current != "" && now.Sub(n.minted) < nonceLifetime && !now.Before(n.minted) {
		return
	}
	if n.current != "" && now.Sub(n.minted) < 2*nonceLifetime {
		n.previous = n.current
	} else {
		n.previous = ""
	}
	n.current, n.minted = randomSecret(18), now
}

// sharedNonces are the nonces of WithNonces, required only while the
// configuration's dpopNonceRequired is set.
type sharedNonces struct {
	dpop.Nonces
	required func() bool
}

// Valid accepts any proof while nonces are not required; otherwise those
// the shared nonces accept.
func (n sharedNonces) Valid(ctx context.Context, nonce string) bool {
	return !n.required() || n.Nonces.Valid(ctx, nonce)
}

// newAuthState builds the identity side's state for s: the DPoP verifiers,
// one per realm, each shared by that realm's token endpoint and protected
// routes, the verified-token caches, one per realm, and the nonce source.
func newAuthState(s *Server) (*authState, error) {
	a := &authState{pageKey: derivedKey(s.keys.seed, labelPageKey), codeKey: derivedKey(s.keys.seed, labelCodeKey),
		redeemerKey: derivedKey(s.keys.seed, labelRedeemerKey), answers: newAnswerCache()}
	a.nonces = &nonceSource{now: s.now, required: s.nonceRequired}
	if s.nonces != nil {
		a.nonces = sharedNonces{Nonces: s.nonces, required: s.nonceRequired}
	}
	a.proofOpts = []dpop.Option{dpop.WithClock(s.now), dpop.WithNonces(a.nonces),
		dpop.WithReplayCacheSize(replayCacheSize), dpop.WithReplayKeyLimit(replayKeyLimit)}
	if s.replay != nil {
		a.proofOpts = append(a.proofOpts, dpop.WithReplayStore(s.replay))
	}
	v, err := dpop.NewVerifier(a.proofOpts...)
	if err != nil {
		return nil, err
	}
	a.dpop = v
	a.proofs = newPerRealm(func() (*dpop.Verifier, error) { return dpop.NewVerifier(a.proofOpts...) })
	a.verified = newVerifiedTokens(maxVerifiedTokens)
	a.revoked = newRevokedTokens()
	return a, nil
}

// Each realm's replay cache holds every proof of 2,800 accepted per second
// over the proofs' 70 s window (some 27 MB when full, with the 20,000 it
// holds apart for proofs dated over a second ahead, and 2.2 MB of marks
// for keys it forgot such a proof of, growing to at most 17 MB under a
// flood of such proofs of fresh keys), 20,000 of them of one key (285 per
// second). Only authenticated callers' proofs are recorded. Past either
// bound the cache forgets the oldest proof (the key's own, or the
// realm's) and refuses only proofs no newer than it: the window shortens
// (to 200,000 / rate), it never closes for everyone, and dating proofs
// ahead does not make them newer. Past the 20,000 held apart it forgets
// one of them and refuses that key's proofs no newer, at the cost of the
// key dating its proofs the furthest ahead (dpop.WithReplayCacheSize says
// which): a user binding tokens to keys of his own and dating proofs
// ahead costs his own keys, not the clients whose clocks run fast, nor,
// below some 40,000 such proofs a second, anyone's fresh proofs.
const (
	replayCacheSize = 200_000
	replayKeyLimit  = 20_000
)

// proofRetryAfter is the Retry-After, in seconds, of the 503 that answers a
// proof the realm's full replay cache cannot record (it holds as many
// proofs at least as new, or forgot one of the key no newer): a proof made
// a second later passes.
const proofRetryAfter = "1"

// keyspaceRetryAfter is the Retry-After, in seconds, of the 503 that
// answers a proof the shared store refused because its keyspace is
// younger than the proofs' window (dpop.ErrKeyspaceNew): a fresh proof
// passes once the keyspace is dpop.DefaultMaxSkew plus
// dpop.ReplayStoreMargin old (the server's Verifiers keep the default
// window), at most this long after the refusal. The store says when its
// keyspace began by its own clock only, so this is the bound, not the
// rest of it; one second more, since a proof's iat is whole seconds (a
// proof made exactly the window after a refusal in the same second
// could still date from before the keyspace's window's end).
var keyspaceRetryAfter = strconv.Itoa(int((dpop.DefaultMaxSkew + dpop.ReplayStoreMargin).Seconds()) + 1)

// nonceRequired reports the configuration's dpopNonceRequired.
func (s *Server) nonceRequired() bool {
	return s.store.Config().DPoPNonceRequired
}

// requestURL is the absolute URL of r as the client addressed it: the
// public base URL and the path (the htu a proof must carry).
func (s *Server) requestURL(r *http.Request) string {
	return s.issuerBase(r) + r.URL.EscapedPath()
}

// checkBinding enforces DPoP binding on a protected route: a bound token
// must come with the DPoP scheme and a valid proof for this exact request
// (method, URL, token hash, key thumbprint, fresh jti, nonce when
// required); an unbound token must come as Bearer.
func (s *Server) checkBinding(w http.ResponseWriter, r *http.Request, realm, raw string, c *issuer.Claims, isDPoP bool) *authFailure {
	jkt := c.JKT()
	switch {
	case jkt == "" && !isDPoP:
		return nil
	case jkt == "":
		return &authFailure{code: "invalid_token", message: "the token is not DPoP-bound; send it with the Bearer scheme", dpop: true}
	case !isDPoP:
		return &authFailure{code: "invalid_token", message: "the token is DPoP-bound; send it with the DPoP scheme and a proof", dpop: true}
	}
	v, err := s.auth.proofs.get(realm)
	if err != nil {
		return &authFailure{unavailable: true, message: "the DPoP verifier is unavailable"}
	}
	_, err = v.Verify(r.Context(), dpop.Request{
		Proofs: r.Header.Values("DPoP"), Method: r.Method, URL: s.requestURL(r), AccessToken: raw, JKT: jkt,
	})
	if err != nil {
		return s.proofFailure(err)
	}
	s.sendNonce(w, r)
	return nil
}

// proofFailure turns a Verify error into the 401 challenge of RFC 9449
// sections 7.1 and 9, or into a 503 when the server cannot judge the proof
// (serverUnavailable: a full replay cache, a failing replay store or
// nonce source): that is the server's capacity, not the client's mistake,
// and a client told invalid_dpop_proof or use_dpop_nonce would discard a
// good token or chase a nonce nobody sends.
func (s *Server) proofFailure(err error) *authFailure {
	if msg, retryAfter, ok := serverUnavailable(err); ok {
		return &authFailure{unavailable: true, message: msg, retryAfter: retryAfter}
	}
	f := &authFailure{dpop: true, challenge: s.auth.dpop.Challenge(err), message: dpop.ErrorDescription(err)}
	var ne *dpop.NonceError
	if errors.As(err, &ne) {
		f.nonce = ne.Nonce
	}
	return f
}

// sendNonce adds the current nonce to a response while nonces are required.
func (s *Server) sendNonce(w http.ResponseWriter, r *http.Request) {
	if !s.nonceRequired() {
		return
	}
	if n, err := s.auth.nonces.Next(r.Context()); err == nil {
		w.Header().Set("DPoP-Nonce", n)
	}
}

// checkTokenProof checks the DPoP proof of a token request (no access
// token yet) and records nothing: the client is not authenticated yet.
// recordTokenProof records it once the client (and the user or code) is;
// its thumbprint is then the token's cnf.jkt.
func (s *Server) checkTokenProof(w http.ResponseWriter, r *http.Request, realm string) (*dpop.Result, *oauthError) {
	v, err := s.auth.proofs.get(realm)
	if err != nil {
		return nil, &oauthError{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", description: "the DPoP verifier is unavailable"}
	}
	res, err := v.Check(r.Context(), dpop.Request{
		Proofs: r.Header.Values("DPoP"), Method: r.Method, URL: s.requestURL(r),
	})
	if err != nil {
		return nil, tokenProofError(w, err)
	}
	return res, nil
}

// recordTokenProof records the proof checkTokenProof accepted, for a
// request whose client is authenticated, and sends the next nonce.
func (s *Server) recordTokenProof(w http.ResponseWriter, r *http.Request, realm string, res *dpop.Result) *oauthError {
	v, err := s.auth.proofs.get(realm)
	if err != nil {
		return &oauthError{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", description: "the DPoP verifier is unavailable"}
	}
	if err := v.RecordContext(r.Context(), res); err != nil {
		return tokenProofError(w, err)
	}
	s.sendNonce(w, r)
	return nil
}

// serverUnavailable returns the message and the Retry-After (seconds) of
// a 503 for a proof refused because the server could not judge it, and
// whether err is one: the replay check could not be made (a full replay
// cache; a failing replay store; a store whose keyspace is younger than
// the proofs' window, which passes a fresh proof within
// keyspaceRetryAfter), or the proof's nonce was refused and no next nonce
// could be minted (dpop.NonceError with MintErr: a challenge without a
// nonce is one no client can meet). Every refusal that is the server's
// capacity or outage goes through here, on protected routes and at the
// token endpoint alike.
func serverUnavailable(err error) (msg, retryAfter string, ok bool) {
	var ne *dpop.NonceError
	switch {
	case errors.Is(err, dpop.ErrReplayCacheFull):
		return "too many DPoP proofs in this realm's replay window; retry shortly", proofRetryAfter, true
	case errors.Is(err, dpop.ErrKeyspaceNew):
		return "the DPoP replay store's keyspace is new (Redis lost its keys, restarted or failed over) and cannot yet tell a proof from a replay; retry with a new proof within " +
			keyspaceRetryAfter + " s", keyspaceRetryAfter, true
	case errors.Is(err, dpop.ErrReplayStoreUnavailable):
		return "the DPoP replay store is unavailable; retry shortly with a new proof", proofRetryAfter, true
	case errors.As(err, &ne) && (ne.MintErr != nil || ne.Nonce == ""):
		return "the DPoP nonce source is unavailable; retry shortly", proofRetryAfter, true
	}
	return "", "", false
}

// tokenProofError is the token endpoint's answer to a proof Check or
// Record refused: a 503 when the server cannot judge it (serverUnavailable),
// the RFC 9449 error otherwise (with the nonce to use).
func tokenProofError(w http.ResponseWriter, err error) *oauthError {
	if msg, retryAfter, ok := serverUnavailable(err); ok {
		w.Header().Set("Retry-After", retryAfter)
		return oauthErrorf(http.StatusServiceUnavailable, "temporarily_unavailable", "%s", said(msg))
	}
	var ne *dpop.NonceError
	if errors.As(err, &ne) && ne.Nonce != "" {
		w.Header().Set("DPoP-Nonce", ne.Nonce)
	}
	return oauthErrorf(http.StatusBadRequest, dpop.ErrorCode(err), "%s", said(dpop.ErrorDescription(err)))
}
