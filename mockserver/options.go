package mockserver

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// Option configures a Server. Options are applied in order by New, which
// then validates the result once.
type Option func(*config)

// config collects the options before New validates them.
type config struct {
	fixture     *Fixture
	fixtureFile string
	issuer      string
	now         func() time.Time
	logger      *slog.Logger
	adminSecret string
	proxies     []string
	accessAlg   string
	corsOrigins []string
	webUI       bool
	denialLog   func(format string, args ...any)
	replay      SharedStore
	nonces      dpop.Nonces
	keySeed     []byte
	replayGiven bool
	noncesGiven bool
	seedGiven   bool
}

// WithFixture seeds the server with f (see Fixture). It replaces an
// earlier WithFixture or WithFixtureFile.
func WithFixture(f Fixture) Option {
	return func(c *config) { c.fixture, c.fixtureFile = &f, "" }
}

// WithFixtureFile seeds the server with the JSON fixture at path, read and
// checked by New. It replaces an earlier WithFixture or WithFixtureFile.
func WithFixtureFile(path string) Option {
	return func(c *config) { c.fixture, c.fixtureFile = nil, path }
}

// WithIssuer sets the public base URL written into tokens (their iss is
// baseURL + "/realms/{realm}") and used to check DPoP proofs. Without it the
// base URL is derived from each request's scheme and Host, and IssueToken is
// unavailable.
func WithIssuer(baseURL string) Option {
	return func(c *config) { c.issuer = baseURL }
}

// WithTrustedProxies names the reverse proxies, by address ("10.0.0.7",
// "::1") or network ("10.0.0.0/8"), whose X-Forwarded-Proto,
// X-Forwarded-Host and X-Forwarded-Port, or Forwarded (RFC 7239) headers
// say the public URL of a request: the one written into tokens and that
// DPoP proofs must name. A request from any other address never has its
// forwarding headers read. Where a header holds a list, the last entry (the
// one the nearest proxy added) counts; the X-Forwarded-* headers come
// before Forwarded. The option is ignored with WithIssuer, which fixes the
// public URL. New fails on an entry that is not an address or network.
func WithTrustedProxies(proxies ...string) Option {
	return func(c *config) { c.proxies = append(c.proxies, proxies...) }
}

// WithClock sets the clock of tokens, timestamps and the audit log
// (time.Now by default).
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// WithLogger sets the logger. The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithAdminSecret sets the secret of the bootstrap platform administration
// client "platform-admin" of the master realm. Without it, and without a
// fixture that defines that client, a random secret is generated; AdminSecret
// returns it.
func WithAdminSecret(secret string) Option {
	return func(c *config) { c.adminSecret = secret }
}

// WithAccessTokenAlgorithm sets the signature algorithm of the access
// tokens the server mints: "RS256" (the default, as Keycloak's realms sign
// them), with the realm's RSA key, which also signs ID tokens; or "ES256",
// with a P-256 key of the realm's own. Discovery lists every algorithm the
// server signs with in id_token_signing_alg_values_supported, and the JWKS
// every key in use, so that an OpenID Connect library that verifies access
// tokens by the provider's metadata (go-oidc's Verifier) accepts either.
// New fails on any other value.
func WithAccessTokenAlgorithm(alg string) Option {
	return func(c *config) { c.accessAlg = alg }
}

// WithWebUI serves the web UI under /ui/: a realm's organizations as
// department trees with their members, its users with their roles and
// memberships, its clients' resources and permissions, and an evaluator of
// decisions. Only a user of the realm holding realm management
// (realm-admin or realm-management/manage-realm), signed in through the
// server's login form, sees any of it. It answers only requests whose Host
// is a loopback host or the host of WithIssuer's URL (or that come from a
// trusted proxy): others, as DNS rebinding sends, are 403. Every list a
// page shows has at most 500 entries and says how many it left out. The
// UI is off by default: without this option no /ui/ route exists.
func WithWebUI() Option {
	return func(c *config) { c.webUI = true }
}

// WithDenialLog has the server write, through logf, the explanation of
// every decision of POST /realms/{realm}/authorization-decision-provider/authorize
// whose status is DENY or ERROR, as ExplainDecision writes it: each pair
// with its reason, the permissions that apply with the facts they matched
// or missed, and the subject's roles with their sources; and of every
// AuthZEN evaluation (access/v1/evaluation and evaluations, not the
// searches) that is false, one line per evaluation. The default logs
// none. logf is called from the request's goroutine, after the answer is
// decided and before it is written, so it must be safe for concurrent
// use; testing.TB's Logf is (mockservertest.LogDenials wraps it so that a
// request late after the test ends logs nothing). It sees no token.
func WithDenialLog(logf func(format string, args ...any)) Option {
	return func(c *config) { c.denialLog = logf }
}

// WithReplayStore makes servers sharing store (replicas behind one front)
// act as one for what a client carries and what refuses a credential:
// every realm's DPoP verifier records proofs in store (see
// dpop.WithReplayStore) instead of in the server's memory, so that a proof
// is accepted once between them; a token revoked at one replica
// (RFC 7009), an authorization code redeemed at one and a web UI session
// logged out at one are recorded there and refused by every replica from
// the moment the call answered; authorization codes are sealed so that any
// replica redeems them (with the same WithKeySeed). While the store fails,
// requests with DPoP proofs, with access tokens, with codes or with UI
// sessions are answered 503 with Retry-After, never served. A credential
// it can never vouch for (it may have lost writes after the credential was
// issued: a flush, a restart, a restore from a snapshot, a failover; its
// error wraps dpop.ErrKeyspaceNew) is refused for good, as an invalid one
// (401 invalid_token, invalid_grant, the login page), and none is issued
// while the store's keyspace is too young to vouch for it (503 with
// Retry-After); a DPoP proof refused for that reason is a 503 with the
// proof window's Retry-After (71 s). A store that is a
// dpop.ChargedReplayStore (redisstore.ReplayStore, and the
// binary's -redis store) charges each proof to its key with the realm's
// per-key limit (20,000 records): a key at it has its oldest record
// dropped to make room, and its proofs no newer than that one answered
// 503, as the in-memory cache does, so one client cannot fill the store
// for every replica and a busy key's fresh proofs pass. A nil store makes New fail.
func WithReplayStore(store SharedStore) Option {
	return func(c *config) { c.replay = store; c.replayGiven = true }
}

// WithNonces makes the server mint and check DPoP nonces with n (for
// example dpop.NewHMACNonces with a secret the replicas share) instead of
// its own random ones, which only the server that made them accepts.
// Nonces are still required only while the configuration's
// dpopNonceRequired is set. A proof refused while n cannot mint the next
// nonce (Next fails: its store is down) is answered 503 with Retry-After,
// never a use_dpop_nonce challenge without a nonce. A nil n makes New fail.
func WithNonces(n dpop.Nonces) Option {
	return func(c *config) { c.nonces = n; c.noncesGiven = true }
}

// WithKeySeed derives every realm's signing keys (the P-256 and the RSA
// key) from seed and the realm's name, instead of making random ones:
// servers given the same seed sign with the same keys, so a token issued
// by one verifies at the others (replicas behind one front; give them the
// same fixture too, and WithReplayStore for the others to serve it: see
// below). The fixture's ids derive from the seed and from what each
// object is (its kind and its name in the realm: a user's username), never
// from its place in the fixture: replicas mid-way through a fixture update
// (a user removed, others moved) give each remaining user her id, and a
// removed user's to nobody, so that a token names the same user, or none,
// at every replica. The seed also derives, one label each, the keys of
// what a client carries between requests: AuthZEN search page tokens and,
// with WithReplayStore, web UI session cookies and sealed authorization
// codes, so that every replica serves them (without a seed each server
// makes them at random). A session key outlives the process only where its
// sign-outs do, in the shared store: without WithReplayStore it is random
// per process, so a restart does not serve a session signed out before
// it. Page tokens have no refusal to forget. The signing keys outlive the
// process while, without WithReplayStore, its revocations do not: a
// server without a shared store serves only the access tokens it minted
// itself (a token carries the id of the process that minted it) and
// refuses every other, as revoked, so a restart does not serve a token
// revoked before it, and replicas without a shared store do not serve
// each other's tokens; a server with a shared store serves the tokens of
// every server sharing one, never those of a server without. A
// provisioned tenant's tokens name the tenant, so a realm of the same
// name provisioned again (after a restart, or at another replica) does
// not serve them. seed must hold at least 16 bytes; keep it
// secret, as it is every realm's private keys. The RSA key of a realm takes a few
// hundred milliseconds to derive, on first use as without a seed.
func WithKeySeed(seed []byte) Option {
	return func(c *config) { c.keySeed = append([]byte(nil), seed...); c.seedGiven = true }
}

// New returns a Server configured by opts. It fails when an option is
// invalid or the fixture is unreadable or names something undefined; loading
// a fixture is all or nothing.
func New(opts ...Option) (*Server, error) {
	c := config{now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.now == nil {
		return nil, errors.New("mockserver: WithClock: nil clock")
	}
	if c.replayGiven && c.replay == nil {
		return nil, errors.New("mockserver: WithReplayStore: nil store")
	}
	if c.noncesGiven && c.nonces == nil {
		return nil, errors.New("mockserver: WithNonces: nil Nonces")
	}
	if c.seedGiven && len(c.keySeed) < issuer.MinSeedSize {
		return nil, fmt.Errorf("mockserver: WithKeySeed: the seed is %d bytes: use at least %d random bytes", len(c.keySeed), issuer.MinSeedSize)
	}
	if c.logger == nil {
		c.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.issuer != "" {
		u, err := url.Parse(c.issuer)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("mockserver: WithIssuer: %q is not an absolute http(s) URL without query or fragment", c.issuer)
		}
		c.issuer = strings.TrimSuffix(c.issuer, "/")
	}
	proxies, err := parseProxies(c.proxies)
	if err != nil {
		return nil, err
	}
	accessAlg := issuer.RS256
	switch c.accessAlg {
	case "", string(issuer.RS256):
	case string(issuer.ES256):
		accessAlg = issuer.ES256
	default:
		return nil, fmt.Errorf("mockserver: WithAccessTokenAlgorithm: %q is not RS256 or ES256", c.accessAlg)
	}
	fx := Fixture{}
	switch {
	case c.fixtureFile != "":
		f, err := LoadFixtureFile(c.fixtureFile)
		if err != nil {
			return nil, err
		}
		fx = f
	case c.fixture != nil:
		fx = *c.fixture
	}

	s := &Server{
		store:     store.New(c.now),
		now:       c.now,
		logger:    c.logger,
		issuer:    c.issuer,
		proxies:   proxies,
		accessAlg: accessAlg,
		denialLog: c.denialLog,
		keys:      keySource{seed: c.keySeed},
		boot:      newBootEpoch(c.replay == nil),
		replay:    c.replay,
		shared:    c.replay,
		nonces:    c.nonces,
	}
	if s.cors, err = newCORSPolicy(fx, c.corsOrigins); err != nil {
		return nil, err
	}
	auth, err := newAuthState(s)
	if err != nil {
		return nil, fmt.Errorf("mockserver: %w", err)
	}
	s.auth = auth
	if c.webUI {
		s.ui = newWebUI(s.keys.seed, s.shared != nil)
	}
	secret, err := s.load(fx, c.adminSecret)
	if err != nil {
		return nil, err
	}
	s.auth.adminSecret = secret
	s.handler = s.withCORS(readBodyFirst(s.hostChecked(s.routes())))
	if wrapHandler != nil {
		s.handler = wrapHandler(s.handler)
	}
	return s, nil
}

// AdminSecret returns the secret of the bootstrap client "platform-admin" of
// the master realm: the one given with WithAdminSecret or the fixture, or
// the one generated at start.
func (s *Server) AdminSecret() string { return s.auth.adminSecret }

// randomSecret returns n random bytes, base64url encoded.
func randomSecret(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
