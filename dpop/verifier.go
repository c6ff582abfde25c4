package dpop

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// maxProofSize bounds the DPoP header value Verify looks at. An RSA-8192 proof
// is under 4 KiB.
const maxProofSize = 8 << 10

// b64 is the base64url of a compact JWS's parts (RFC 7515 section 2): no
// padding, canonical trailing bits. Decode parts with decodePart only.
var b64 = base64.RawURLEncoding.Strict()

// decodePart appends to dst[:0] the bytes of part, a part of a compact JWS
// (header, payload or signature), decoded strictly: base64url without
// padding, with canonical trailing bits, and nothing outside its alphabet
// (encoding/base64 skips CR and LF even when strict; they are refused
// here), so each part's bytes have exactly one base64url encoding. A proof
// itself may have more than one form: an ECDSA signature (r, s) has a twin
// (r, n - s) that anyone who saw it can make, and both verify (a Signer
// sends the low one; proofs of other signers may carry either). So the
// identity of a proof, for the replay check, is its key and jti, never its
// bytes: a twin is the same proof and a replay.
func decodePart(dst []byte, part string) ([]byte, error) {
	if strings.ContainsAny(part, "\r\n") {
		return dst[:0], base64.CorruptInputError(strings.IndexAny(part, "\r\n"))
	}
	return b64.AppendDecode(dst[:0], []byte(part))
}

// Verifier checks DPoP proofs on the server side (RFC 9449 sections 4.3 and
// 7). Build it with [NewVerifier]; it is immutable apart from its replay cache
// and safe for concurrent use by multiple goroutines. One Verifier should
// serve all the endpoints that share a replay window, so that a proof
// accepted by one is a replay at every other.
//
// The replay cache lives in memory: several server replicas each need their
// own Verifier and detect replays only among the proofs they saw themselves,
// unless they share a [ReplayStore] ([WithReplayStore]). It begins empty,
// so a Verifier without a store, on the real clock, cannot tell a proof
// issued before the second it was made in from the replay of a request
// captured before a process restarted. Such a proof is accepted only with
// a nonce the server gave after that start: without one it is refused
// with a [*NonceError] (ErrorCode "use_dpop_nonce", matching
// [ErrNonceRequired] and [ErrIATTooOld]) carrying the nonce to send, and
// the client's resend with it passes. Without [WithNonces] that nonce is
// the Verifier's own, drawn at random when it was made and asked for only
// of such proofs; with it, the server's next nonce followed by '~' and the
// Verifier's own, whose first part the server's [Nonces] check as any
// other: a nonce they accept does not vouch alone, since they cannot say
// when it was given (a secret kept across the restart, a requirement
// switched off). Replicas sharing the server's Nonces (or asking none)
// behind one balancer accept each other's answers: a start nonce not the
// Verifier's own is taken off before the server's nonce is judged, vouches
// for nothing, and is handed on after the server's next when the Verifier
// asks again (the Verifier's own last, at most four in all), so that a
// client whose resend met another replica passes every replica on its
// next call. The proof's iat
// is the client's clock: a client whose clock runs a few seconds slow
// dates its fresh proofs before a Verifier only seconds old, and must not
// be refused for it (a-dpop13 F1). The start is read on the wall clock of
// then and kept on the monotonic clock, and a proof dated before either
// is asked for the nonce, so that no step of the wall clock since moves a
// captured proof past it. A proof a fast
// client clock dated ahead, or one accepted in the same second as the
// restart, can still be replayed after it: a ReplayStore, or nonces from a
// source that a restart renews, closes that.
type Verifier struct {
	algs    []jose.SignatureAlgorithm
	algList string // space-separated, for the challenge
	maxAge  time.Duration
	maxSkew time.Duration
	now     func() time.Time
	nonces  Nonces
	replay  *replayCache
	store   ReplayStore // replaces replay when set (replaystore.go)
	// keyLimit is WithReplayKeyLimit's bound, given to a
	// ChargedReplayStore.
	keyLimit int
	// made is when the in-memory replay cache began, with its monotonic
	// reading: a proof issued before that second needs a nonce given
	// since (beforeMade). Zero with a store, which has its own rule for a
	// keyspace that began too recently (ErrKeyspaceNew), and with a clock
	// of the caller's (WithClock). startNonce is the nonce given for such
	// a proof without WithNonces: random, drawn when made was read.
	made       time.Time
	startNonce string
	// maxRSABits bounds an RSA key's modulus (WithMaxRSABits).
	maxRSABits int
}

// NewVerifier returns a Verifier configured by opts. Without options it allows
// ES256, ES384, PS256, RS256, EdDSA and Ed25519, accepts an iat from 60 s in the past
// to 10 s in the future by time.Now, remembers up to 100,000 proofs (10,000
// of one key) and 10,000 more dated over a second ahead (see
// [WithReplayCacheSize]),
// takes RSA keys of 2,048 to 4,096 bits (DefaultMaxRSABits) with exponent
// 65537, and requires no nonce. It fails if an option was given an invalid value.
func NewVerifier(opts ...Option) (*Verifier, error) {
	c := defaultConfig()
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, err
	}
	names := make([]string, len(c.algs))
	for i, a := range c.algs {
		names[i] = string(a)
	}
	var (
		made       time.Time
		startNonce string
	)
	if c.store == nil && !c.clockSet {
		made = time.Now()
		startNonce = rand.Text()
	}
	return &Verifier{
		made:       made,
		startNonce: startNonce,
		algs:       append([]jose.SignatureAlgorithm(nil), c.algs...),
		algList:    strings.Join(names, " "),
		maxAge:     c.maxAge,
		maxSkew:    c.maxSkew,
		now:        c.now,
		nonces:     c.nonces,
		replay:     newReplayCache(c.cacheSize, c.keyLimit, c.maxAge),
		store:      c.store,

		keyLimit:   c.keyLimit,
		maxRSABits: c.maxRSA,
	}, nil
}

// Algorithms returns the algorithms v allows, in order: the value for an
// authorization server's dpop_signing_alg_values_supported metadata.
func (v *Verifier) Algorithms() []string {
	return strings.Fields(v.algList)
}

// Request is what [Verifier.Verify] checks a proof against.
type Request struct {
	// Proofs holds every value of the request's DPoP header, as returned by
	// r.Header.Values("DPoP"). Exactly one non-empty value is accepted.
	Proofs []string
	// Method is the request method, r.Method.
	Method string
	// URL is the absolute URL the client sent the request to, as the client
	// saw it: scheme and host of the public origin (not of a proxy hop) and
	// the path. The query and fragment are ignored.
	URL string
	// AccessToken is the token from "Authorization: DPoP <token>", or "" at
	// the token endpoint. When set, the proof must carry its hash (ath) and
	// JKT must be set too.
	AccessToken string
	// JKT is the access token's cnf.jkt (or an authorization request's
	// dpop_jkt): when set, the proof's key must have this thumbprint. It is
	// required whenever AccessToken is set, so a bound token is never
	// accepted without checking its binding.
	JKT string
}

// Result describes a proof that passed every check.
type Result struct {
	// Thumbprint is the RFC 7638 SHA-256 thumbprint of the proof's key,
	// base64url: the cnf.jkt to put in a token issued for this proof.
	Thumbprint string
	// Algorithm is the proof's JWS algorithm.
	Algorithm string
	// PublicKey is the proof's key: *ecdsa.PublicKey, *rsa.PublicKey or
	// ed25519.PublicKey.
	PublicKey crypto.PublicKey
	// Claims are the proof's claims.
	Claims Claims
}

// Claims are the claims of a verified proof.
type Claims struct {
	ID              string    // jti
	Method          string    // htm
	URL             string    // htu, as the client sent it
	IssuedAt        time.Time // iat
	Nonce           string    // nonce, "" if absent
	AccessTokenHash string    // ath, "" if absent
}

// Verify checks the proof of one request, in this order: one DPoP header
// value, a well-formed compact JWS of limited size with unique JSON member
// names, typ "dpop+jwt", an allowed alg, a public jwk that fits alg, the
// signature, the claims jti, htm, htu and iat present, htm equal to
// req.Method, htu equal to req.URL after [HTU], iat inside the window, ath
// equal to [TokenHash] of req.AccessToken when a token is given, the key's
// thumbprint equal to req.JKT (which must be set when a token is given, else
// [ErrKeyMismatch]), the nonce when [WithNonces] is set,
// and last the replay check, which records the proof. A proof that fails any
// earlier check is not recorded. Verify is [Verifier.Check] followed by
// [Verifier.RecordContext].
//
// Call Verify only for a request whose caller is already authenticated: an
// access token you verified, whose cnf.jkt is req.JKT. Where the caller is
// not authenticated yet (a token endpoint, before the client's credentials
// or code are checked), call Check, and Record once the caller is: a
// request that fails authentication must store nothing, or a flood of them
// would fill the replay cache on the caller's behalf.
//
// On success it returns the proof's thumbprint and claims. On failure the
// error matches exactly one of the package's sentinel errors under errors.Is
// (plus [ErrUseNonce] for the nonce causes); see [ErrorCode] for the OAuth
// error each one maps to. Errors never contain the access token. ctx is
// passed to the [Nonces] and bounds the [ReplayStore] if there is one.
func (v *Verifier) Verify(ctx context.Context, req Request) (*Result, error) {
	res, err := v.Check(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := v.RecordContext(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}

// Check runs every check of [Verifier.Verify] and records nothing: the
// replay check only looks the proof up, refusing one already recorded
// ([ErrReplay]) or one the cache can no longer tell from a replay
// ([ErrReplayCacheFull]). Call [Verifier.Record] with its Result once the
// request's caller is authenticated; until then the proof may be presented
// again. Its errors are those of Verify.
//
// With a [ReplayStore] ([WithReplayStore]) Check does not look the proof
// up: the store can only check a proof by recording it. Record then makes
// the replay check, and a Result of Check is not an accepted proof until
// Record returned nil.
func (v *Verifier) Check(ctx context.Context, req Request) (*Result, error) {
	if v == nil || v.replay == nil {
		return nil, errors.New("dpop: Verifier not initialised: use NewVerifier")
	}
	s := getScratch()
	defer s.release()
	return v.check(ctx, req, s)
}

// check is Check working in s.
func (v *Verifier) check(ctx context.Context, req Request, s *scratch) (*Result, error) {
	proof, err := singleProof(req.Proofs)
	if err != nil {
		return nil, err
	}
	alg, pub, jkt, err := v.checkHeader(s, proof)
	if err != nil {
		return nil, err
	}
	claims, err := s.verifiedClaims(proof, alg, pub)
	if err != nil {
		return nil, err
	}
	if claims.Method != req.Method {
		return nil, ErrMethod
	}
	if err := sameURL(req.URL, claims.URL); err != nil {
		return nil, err
	}

	now := v.clock()
	// Compare instants, not durations: a Duration saturates for an iat
	// centuries away, and negating the minimum Duration overflows.
	if claims.IssuedAt.Before(now.Add(-v.maxAge)) {
		return nil, ErrIATTooOld
	}
	if claims.IssuedAt.After(now.Add(v.maxSkew)) {
		return nil, ErrIATInFuture
	}

	if req.AccessToken != "" {
		if claims.AccessTokenHash == "" {
			return nil, fmt.Errorf("%w: ath missing", ErrTokenHash)
		}
		if !tokenHashIs(claims.AccessTokenHash, req.AccessToken) {
			return nil, ErrTokenHash
		}
	}

	if req.JKT == "" && req.AccessToken != "" {
		// Fail closed: a token presented with a proof must be bound to a key.
		return nil, fmt.Errorf("%w: access token given without its cnf.jkt", ErrKeyMismatch)
	}
	if req.JKT != "" && subtle.ConstantTimeCompare([]byte(req.JKT), []byte(jkt)) != 1 {
		return nil, ErrKeyMismatch
	}

	nonce, starts, sinceMade := v.splitNonce(claims.Nonce)
	// dated is decided from the proof's iat alone: a use_dpop_nonce answer
	// carries everything the resend will need, so the start nonce goes
	// with the server's next whenever this iat needs it, whether or not
	// the refused proof carried it (a-dpop14 F1: "old~start" gone stale was
	// answered with the bare next nonce, and the one resend refused again).
	dated := v.issuedBeforeMade(claims.IssuedAt, now)
	if v.nonces != nil && !v.nonces.Valid(ctx, nonce) {
		if starts == "" || !v.nonces.Valid(ctx, claims.Nonce) {
			nerr := &NonceError{Err: ErrNonceStale}
			if nonce == "" {
				nerr.Err = ErrNonceRequired
			}
			return nil, v.askNonce(ctx, nerr, starts, dated)
		}
		// A nonce of the caller's Nonces that ends as a start nonce
		// does: the whole claim is the server's.
		starts, sinceMade = "", false
	}
	if dated && !sinceMade {
		return nil, v.askNonce(ctx, &NonceError{Err: errBeforeVerifier}, starts, true)
	}

	if v.store == nil {
		if err := v.replay.check(newReplayKey(jkt, claims.ID), newOwnerKey(jkt), claims.IssuedAt.Add(v.maxAge), now); err != nil {
			return nil, err
		}
	}
	return &Result{
		Thumbprint: jkt,
		Algorithm:  string(alg),
		PublicKey:  pub,
		Claims:     claims,
	}, nil
}

// Record records the proof res describes, a Result of [Verifier.Check], as
// used: from then on, until its iat is too old for the window (after which
// the iat check refuses it anyway), the same key and jti are refused with
// [ErrReplay]. It returns ErrReplay if the proof was recorded since it was
// checked, [ErrReplayCacheFull] if the cache cannot tell it from a replay,
// and [ErrIATTooOld] if it has grown too old since, and records nothing
// then. Record the proof of a request only once its caller is
// authenticated (see Verify). It is safe for concurrent use: of two
// requests with one proof, exactly one records it.
//
// With a [ReplayStore], Record is RecordContext with a background context:
// the call is bounded by [ReplayStoreTimeout] only. Use RecordContext to
// bound it by the request's context.
func (v *Verifier) Record(res *Result) error {
	return v.RecordContext(context.Background(), res)
}

// RecordContext is [Verifier.Record] bounded by ctx: with a [ReplayStore]
// ([WithReplayStore]) it records the proof there, atomically across the
// replicas sharing the store, and returns [ErrReplay] if any of them
// recorded it first, or [ErrReplayStoreUnavailable] if the store failed or
// did not answer before ctx ended (or [ReplayStoreTimeout] passed). Without
// a store ctx is not used.
func (v *Verifier) RecordContext(ctx context.Context, res *Result) error {
	if v == nil || v.replay == nil {
		return errors.New("dpop: Verifier not initialised: use NewVerifier")
	}
	if res == nil || res.Thumbprint == "" || res.Claims.ID == "" {
		return errors.New("dpop: Record needs the Result of a successful Check")
	}
	now := v.clock()
	expires := res.Claims.IssuedAt.Add(v.maxAge)
	if expires.Before(now) {
		return ErrIATTooOld
	}
	if v.store != nil {
		return v.recordInStore(ctx, res, expires)
	}
	return v.replay.add(newReplayKey(res.Thumbprint, res.Claims.ID), newOwnerKey(res.Thumbprint), expires, now)
}

// clock returns the current time. It may go back when the wall clock
// steps back; the replay cache's watermarks keep a proof it dropped as
// expired from passing again then (replay.go).
func (v *Verifier) clock() time.Time { return v.now() }

// issuedBeforeMade reports whether a proof issued at iat could have been
// accepted before the Verifier's replay cache began (made), read at now,
// the real clock: whether iat is before made's second on the wall clock
// as it read then, or as it reads now (now less the monotonic time since
// made). A step of the wall clock either way since, however long after
// the start, moves neither past a proof captured before it (a-fix13: a
// clock stepped back after the proofs' window had passed let one back
// into the window). A proof so dated is asked for a nonce, not refused,
// so a wall clock wrong at the start costs its clients one round trip.
func (v *Verifier) issuedBeforeMade(iat, now time.Time) bool {
	if v.made.IsZero() {
		return false
	}
	since := now.Add(-time.Since(v.made)).Truncate(time.Second) // iat counts whole seconds
	return iat.Before(since) || iat.Before(v.made.Truncate(time.Second))
}

// maxStartParts bounds the start nonces a nonce claim carries after the
// server's nonce: the Verifier's own and those of other Verifiers (replicas
// sharing the server's Nonces) that a client met on its way here.
const maxStartParts = 4

// startNonceLen is the length of a start nonce, rand.Text's.
const startNonceLen = 26

// isStartNonce reports whether part has a start nonce's shape: rand.Text's
// 26 characters of the standard base32 alphabet.
func isStartNonce(part string) bool {
	if len(part) != startNonceLen {
		return false
	}
	for i := range len(part) {
		if c := part[i]; (c < 'A' || c > 'Z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// splitNonce takes the start nonces off a proof's nonce claim: it returns
// what is left for the server's Nonces (rest), the start nonces taken off
// (starts, '~'-separated, as the claim carried them), and whether the
// Verifier's own was among them (compared in constant time). The start
// nonce is the whole claim without WithNonces, and follows the server's
// nonce after a '~' with it: the server's Nonces cannot say when a nonce
// was given (an HMAC secret kept across a restart, a requirement switched
// off), so only the Verifier's own tells a proof made since it began
// (a-fix13 F3). A start nonce not its own is another Verifier's, a replica
// sharing the server's Nonces behind the same balancer: it is taken off,
// so that the nonce the other replica gave is judged as any other here,
// and vouches for nothing (a-dpop15 F4: a slow client asked "next~startA"
// by replica A was refused the whole string by replica B, and its one
// resend spent). Up to maxStartParts are taken off, from the end; with
// WithNonces the first part is always the server's.
func (v *Verifier) splitNonce(nonce string) (rest, starts string, sinceMade bool) {
	rest, from := nonce, len(nonce)
	for range maxStartParts {
		cut := strings.LastIndexByte(rest, '~')
		if cut < 0 && v.nonces != nil {
			break
		}
		part := rest[cut+1:]
		if !isStartNonce(part) {
			break
		}
		if v.startNonce != "" && subtle.ConstantTimeCompare([]byte(part), []byte(v.startNonce)) == 1 {
			sinceMade = true
		}
		if cut < 0 {
			return "", nonce, sinceMade
		}
		rest, from = rest[:cut], cut+1
	}
	return rest, nonce[from:], sinceMade
}

// askNonce fills nerr with the nonce to send and returns it: the server's
// next (with WithNonces; none if minting it failed), followed by the start
// nonces of other Verifiers the refused proof carried (starts, as
// splitNonce took them off) and, when the proof is dated before the
// Verifier began (withStart), the Verifier's own, each after a '~'; or the
// start nonces alone without WithNonces. Carrying the others' lets a slow
// client whose resend lands on another replica, started within its lag
// too, pass there on its next call: every replica finds its own among
// them (at most maxStartParts, the latest kept).
func (v *Verifier) askNonce(ctx context.Context, nerr *NonceError, starts string, withStart bool) *NonceError {
	var parts []string
	for part := range strings.SplitSeq(starts, "~") {
		if isStartNonce(part) && part != v.startNonce {
			parts = append(parts, part)
		}
	}
	if v.startNonce != "" && (withStart || v.nonces == nil) {
		parts = append(parts, v.startNonce)
	}
	parts = parts[max(len(parts)-maxStartParts, 0):]
	if v.nonces == nil {
		nerr.Nonce = strings.Join(parts, "~")
		return nerr
	}
	nerr.Nonce, nerr.MintErr = v.nonces.Next(ctx)
	switch {
	case nerr.MintErr != nil:
		nerr.Nonce = ""
	case len(parts) > 0:
		nerr.Nonce += "~" + strings.Join(parts, "~")
	}
	return nerr
}

// errBeforeVerifier is the cause of the [*NonceError] refusing a proof
// issued before the Verifier's in-memory replay cache began and carrying
// no nonce given since: the cache cannot know whether the process before
// a restart (or a Verifier made earlier) accepted it. It matches
// ErrNonceRequired, so that the server asks for the nonce, and
// ErrIATTooOld, what the proof's date alone says.
var errBeforeVerifier error = beforeVerifier{}

type beforeVerifier struct{}

func (beforeVerifier) Error() string {
	return "dpop: nonce required: the proof is dated before this Verifier began, so only a nonce given since tells it from a replay (WithReplayStore keeps proofs across restarts)"
}

func (beforeVerifier) Is(target error) bool {
	return target == ErrNonceRequired || target == ErrIATTooOld
}

// singleProof returns the one DPoP header value of a request.
func singleProof(values []string) (string, error) {
	switch {
	case len(values) == 0:
		return "", ErrMissingProof
	case len(values) > 1:
		return "", ErrMultipleProofs
	}
	p := values[0]
	switch {
	case strings.TrimSpace(p) == "":
		return "", ErrMissingProof
	case strings.ContainsRune(p, ','):
		// Several header lines folded into one; a JWS never holds a comma.
		return "", ErrMultipleProofs
	case len(p) > maxProofSize:
		return "", fmt.Errorf("%w: larger than %d bytes", ErrMalformed, maxProofSize)
	}
	return p, nil
}

// checkHeader decodes and checks the protected header: typ, alg and jwk. It
// returns the algorithm, the embedded public key and its thumbprint.
func (v *Verifier) checkHeader(s *scratch, proof string) (jose.SignatureAlgorithm, crypto.PublicKey, string, error) {
	encHeader, rest, ok := strings.Cut(proof, ".")
	if !ok || strings.Count(rest, ".") != 1 {
		return "", nil, "", fmt.Errorf("%w: not a compact JWS", ErrMalformed)
	}
	var err error
	if s.header, err = decodePart(s.header, encHeader); err != nil {
		return "", nil, "", fmt.Errorf("%w: header is not base64url", ErrMalformed)
	}
	if err := s.readHeader(); err != nil {
		return "", nil, "", fmt.Errorf("%w: header: %s", ErrMalformed, strictjson.Problem(err))
	}
	if len(s.members[hdrCrit]) > 0 {
		return "", nil, "", fmt.Errorf("%w: header parameter %q not supported", ErrMalformed, "crit")
	}
	if len(s.members[hdrB64]) > 0 {
		return "", nil, "", fmt.Errorf("%w: header parameter %q not supported", ErrMalformed, "b64")
	}

	if typ, err := s.stringMember(s.members[hdrTyp]); err != nil || string(typ) != proofType {
		return "", nil, "", ErrType
	}

	name, err := s.stringMember(s.members[hdrAlg])
	if err != nil || len(name) == 0 {
		return "", nil, "", fmt.Errorf("%w: alg missing", ErrAlgorithm)
	}
	alg, ok := v.allowed(name)
	if !ok {
		return "", nil, "", ErrAlgorithm
	}

	rawJWK := s.members[hdrJWK]
	if len(rawJWK) == 0 {
		return "", nil, "", fmt.Errorf("%w: jwk missing", ErrKey)
	}
	if err := readJWK(s.r, rawJWK, &s.jwk); err != nil {
		return "", nil, "", err
	}
	pub, jkt, err := s.jwk.publicKey()
	if err != nil {
		return "", nil, "", err
	}
	if err := keyFitsAlgorithm(alg, pub, v.maxRSABits); err != nil {
		return "", nil, "", err
	}
	return alg, pub, jkt, nil
}

// verifiedClaims checks the signature of proof, whose header checkHeader
// has accepted, and returns its claims.
func (s *scratch) verifiedClaims(proof string, alg jose.SignatureAlgorithm, pub crypto.PublicKey) (Claims, error) {
	dot := strings.LastIndexByte(proof, '.')
	input := proof[:dot]
	encPayload := input[strings.IndexByte(input, '.')+1:]
	// Strictly, as the header: a part's unused trailing bits, which no
	// signature covers, would otherwise give its bytes a second encoding.
	var err error
	if s.payload, err = decodePart(s.payload, encPayload); err != nil {
		return Claims{}, fmt.Errorf("%w: payload is not base64url", ErrMalformed)
	}
	if s.sig, err = decodePart(s.sig, proof[dot+1:]); err != nil {
		return Claims{}, fmt.Errorf("%w: signature is not base64url", ErrMalformed)
	}
	s.input = append(s.input[:0], input...)
	if !verifySignature(alg, pub, s.input, s.sig, &s.der) {
		return Claims{}, ErrSignature
	}
	return s.readClaims()
}

// allowed returns the algorithm named name if v allows it.
func (v *Verifier) allowed(name []byte) (jose.SignatureAlgorithm, bool) {
	for _, a := range v.algs {
		if string(a) == string(name) {
			return a, true
		}
	}
	return "", false
}

// sameURL checks that htu, a proof's claim, names the request URL url
// after [HTU].
func sameURL(url, htu string) error {
	wantURL, err := HTU(url)
	if err != nil {
		return fmt.Errorf("%w: the request url cannot be normalised", ErrURL)
	}
	if htu == url {
		return nil // one text, one normal form
	}
	gotURL, err := HTU(htu)
	if err != nil {
		return fmt.Errorf("%w: htu cannot be normalised", ErrURL)
	}
	if gotURL != wantURL {
		return ErrURL
	}
	return nil
}

// tokenHashIs reports, in constant time, whether ath is [TokenHash] of
// token.
func tokenHashIs(ath, token string) bool {
	sum := sha256.Sum256([]byte(token))
	var want [43]byte // base64url of 32 bytes, unpadded
	base64.RawURLEncoding.Encode(want[:], sum[:])
	return subtle.ConstantTimeCompare([]byte(ath), want[:]) == 1
}

// Challenge returns the value of a WWW-Authenticate header for a resource
// server that refuses a request because of err, a Verify error (RFC 9449
// sections 7.1 and 9):
//
//	DPoP error="invalid_dpop_proof", error_description="proof is too old", algs="ES256 ES384 PS256 RS256 EdDSA"
//
// The error code is [ErrorCode] of err and the description [ErrorDescription];
// neither ever contains request data. For a nil err (a request that carried
// no credentials) it returns just `DPoP algs="..."`. A "use_dpop_nonce"
// challenge has to go with a DPoP-Nonce header holding the [*NonceError]'s
// Nonce; setting it is the caller's job.
func (v *Verifier) Challenge(err error) string {
	var b strings.Builder
	b.WriteString("DPoP ")
	if code := ErrorCode(err); code != "" {
		b.WriteString(`error="` + code + `", error_description="` + ErrorDescription(err) + `", `)
	}
	b.WriteString(`algs="` + v.algList + `"`)
	return b.String()
}
