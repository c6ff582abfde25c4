package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/orgauthz/orgauthz/dpop"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// Scheme is the HTTP authorization scheme a token is sent with.
type Scheme uint8

// The schemes.
const (
	SchemeBearer Scheme = iota + 1
	SchemeDPoP
	// SchemeNone is a client's explicit choice to send no credential
	// (authzen.WithoutCredentials): its Ident's Token is "".
	SchemeNone
)

// String returns the scheme as written in an Authorization header and in
// events.Event.TokenType; "" for SchemeNone, which writes no header.
func (s Scheme) String() string {
	switch s {
	case SchemeBearer:
		return "Bearer"
	case SchemeDPoP:
		return "DPoP"
	}
	return ""
}

// Ident identifies a token for caching and coalescing: the full token
// string and its scheme, compared exactly, so that two tokens never share a
// cache entry or a request however their hashes fall.
type Ident struct {
	Scheme Scheme
	Token  string
	// Echoable says that the request's body named invalid_token itself
	// (namesInvalidToken), so that an answer's body may be repeating it:
	// no body refuses the token then (readAnswer's repeats).
	Echoable bool
}

// Credential attaches a token to one outgoing attempt. Authorize is called
// on a clone of the request for every attempt, retries included, so that a
// proof-of-possession credential (DPoP) can make a fresh proof each time;
// nonce is the latest DPoP-Nonce of the request's origin, "" if none.
// Authorize must return by the time the request's context ends: anything
// it runs that can block (a signer) runs under that context.
// Usable reports, before anything is sent, why the credential cannot work.
type Credential interface {
	Ident() Ident
	Usable() error
	Authorize(r *http.Request, nonce string) error
}

// bearer is an RFC 6750 bearer token with its Authorization header value,
// made once rather than for every attempt.
type bearer struct{ token, header string }

// NewBearer returns the credential of a Bearer token.
func NewBearer(token string) Credential { return &bearer{token: token, header: "Bearer " + token} }

func (b *bearer) Ident() Ident { return Ident{Scheme: SchemeBearer, Token: b.token} }

func (b *bearer) Usable() error { return nil }

func (b *bearer) Authorize(r *http.Request, _ string) error {
	r.Header["Authorization"] = []string{b.header} // canonical key: no Set needed
	return nil
}

// none is the credential of a client that sends none.
type none struct{}

// NewNone returns the credential of a client made to send no credential:
// it attaches nothing to a request.
func NewNone() Credential { return none{} }

func (none) Ident() Ident { return Ident{Scheme: SchemeNone} }

func (none) Usable() error { return nil }

func (none) Authorize(*http.Request, string) error { return nil }

// ValidToken reports whether token can be sent in an Authorization header:
// non-empty visible ASCII without spaces (RFC 6750's token68 is a subset).
func ValidToken(token string) bool {
	if token == "" {
		return false
	}
	for i := 0; i < len(token); i++ {
		if token[i] < 0x21 || token[i] > 0x7e {
			return false
		}
	}
	return true
}

// CheckToken returns why token cannot be sent, as an error matching
// ErrNoToken that says what to fix and holds nothing of the token: it
// holds characters an HTTP header cannot carry (ValidToken), or it is
// longer than max bytes. A token over the bound is refused before it is
// sent, so that a front that resets connections on large headers never
// sees it and one caller's oversized token never counts against the
// breaker every caller shares. nil when the token can be sent.
func (p Peer) CheckToken(token string, max int) error {
	switch {
	case len(token) > max:
		return fmt.Errorf("%w: the token is %d bytes, more than the %d the client sends (WithMaxTokenBytes); "+
			"an access token is a few KiB: check what is passed as the token, or raise the bound", p.Err(ErrNoToken), len(token), max)
	case !ValidToken(token):
		return fmt.Errorf("%w: the token holds characters an HTTP header cannot carry", p.Err(ErrNoToken))
	}
	return nil
}

// Held is the credential of a client's own token (SetToken,
// SetDPoPToken), held until the client lets go of it (Release) because the
// token was replaced or cleared. From then on it attaches to nothing: an
// attempt of a call still under way, a retry or a nonce resend, fails with
// ErrTokenChanged instead of being sent with a token the client no longer
// holds, and the Exchanger uses no answer to it that arrives after. A
// client's cache purge of the token, made after Release, fences the
// writers made before it; a writer made after it belongs to a request
// that Release stops. So a call in flight can neither return nor cache a
// decision for a token that is no longer the client's.
type Held struct {
	Credential
	released atomic.Bool
}

// Hold returns cred held for a client.
func Hold(cred Credential) *Held { return &Held{Credential: cred} }

// Release lets go of the credential; it must be called before the
// token's cached decisions are purged. Calling it again does nothing.
func (h *Held) Release() { h.released.Store(true) }

// Authorize attaches the credential, unless it was released.
func (h *Held) Authorize(r *http.Request, nonce string) error {
	if h.released.Load() {
		return ErrTokenChanged
	}
	return h.Credential.Authorize(r, nonce)
}

// released reports whether cred is a Held credential that was released.
func released(cred Credential) bool {
	h, ok := cred.(*Held)
	return ok && h.released.Load()
}

// NewDPoP returns the credential of a DPoP-bound token (RFC 9449) and the
// key it is bound to: each attempt carries "Authorization: DPoP <token>"
// and a fresh proof. A nil signer is not Usable.
func NewDPoP(token string, signer *dpop.Signer) Credential {
	return &dpopCredential{token: token, header: "DPoP " + token, signer: signer}
}

// dpopCredential is a DPoP-bound token and the key it is bound to.
type dpopCredential struct {
	token  string
	header string // "DPoP " + token, made once
	signer *dpop.Signer
}

func (d *dpopCredential) Ident() Ident { return Ident{Scheme: SchemeDPoP, Token: d.token} }

func (d *dpopCredential) Usable() error {
	if d.signer == nil {
		return errors.New("SetDPoPToken was given a nil signer")
	}
	return nil
}

// Authorize signs the attempt's proof under its context (prove): a key
// that is not held in memory is waited for only until the call's context
// ends.
func (d *dpopCredential) Authorize(r *http.Request, nonce string) error {
	proof, err := prove(r.Context(), d.signer, r.Method, r.URL.String(), d.token, nonce)
	if err != nil {
		return err
	}
	r.Header["Authorization"] = []string{d.header} // canonical keys: no Set needed
	r.Header["Dpop"] = []string{proof}
	return nil
}

// NonceStore keeps the latest DPoP-Nonce each server origin sent. It is safe
// for concurrent use; the zero value is empty and ready. A client talks to
// one server and follows no redirects, so it holds one entry in practice;
// it is bounded all the same.
type NonceStore struct {
	mu sync.Mutex
	m  map[originKey]string
}

const maxNonceOrigins = 16

func (s *NonceStore) get(origin originKey) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[origin]
}

func (s *NonceStore) set(origin originKey, nonce string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxNonceOrigins && s.m[origin] == "" {
		s.m = make(map[originKey]string)
	}
	s.m[origin] = nonce
}

// originKey is a server origin: lower-cased scheme and host, and the port
// unless it is the scheme's default. Nonces are per origin.
type originKey struct{ scheme, host, port string }

// origin returns u's origin. It allocates nothing for a URL already in
// lower case: its parts are u's own strings.
func origin(u *url.URL) originKey {
	scheme, host, port := ascii.Lower(u.Scheme), ascii.Lower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	return originKey{scheme, host, port}
}

// dpopNonce returns resp's DPoP-Nonce header, read by its canonical key
// ("Dpop-Nonce"): Header.Get would canonicalise "DPoP-Nonce" anew, with an
// allocation, on every response. A value that is not a nonce (RFC 9449
// section 8: 1*NQCHAR) or is longer than maxNonceBytes counts as none: it
// would go into every later proof, each then refused, until the server
// sent another.
func dpopNonce(resp *http.Response) string {
	v := resp.Header["Dpop-Nonce"]
	if len(v) == 0 || len(v[0]) > maxNonceBytes {
		return ""
	}
	for i := 0; i < len(v[0]); i++ {
		if c := v[0][i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return ""
		}
	}
	return v[0]
}

// maxNonceBytes bounds a DPoP-Nonce the client takes: far above any
// server's (a nonce is a handful of random bytes or a MACed time), far
// below what would push a proof past a server's header limits.
const maxNonceBytes = 1024

// nonceAsked returns the nonce an answer to a DPoP request may be owing
// (see authorizer), with the answer's one reading (readAnswer, the same the
// blame and the error's text read): that of a 401 or 400 carrying a
// DPoP-Nonce, when the reading lets it be resent (reading.resendable:
// never for an answer refusing the token, a-fix14b F2, a-dpop14 F2). It
// returns "" for any other answer. The nonce may be asked for in a
// challenge (error="use_dpop_nonce") or in the JSON body as RFC 9449
// section 8 words it ({"error":"use_dpop_nonce"}); a 400 that names no
// DPoP error is resent too (it decides nothing). body is what was read of
// the answer's body.
func nonceAsked(resp *http.Response, body []byte, repeats bool) (string, reading) {
	nonce := offeredNonce(resp)
	if nonce == "" {
		return "", reading{}
	}
	r := readAnswer(resp.StatusCode, Challenges(resp.Header), body, repeats)
	if !r.resendable(resp.StatusCode) {
		return "", r
	}
	return nonce, r
}

// offeredNonce returns the DPoP-Nonce of a 401 or 400, "" for any other
// answer or one without.
func offeredNonce(resp *http.Response) string {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusBadRequest {
		return ""
	}
	return dpopNonce(resp)
}

// DPoPChallengeError returns the error parameter of the DPoP challenge in a
// WWW-Authenticate value (RFC 9449 section 7.1), or "" when there is none.
// The value may hold several challenges (Bearer and DPoP, say), each with
// parameters whose values are tokens or quoted strings.
func DPoPChallengeError(header string) string {
	var first string
	challengeErrors(header, func(scheme, code string) bool {
		if scheme != "dpop" {
			return true
		}
		first = code
		return false
	})
	return first
}

// challengeErrors calls yield with the scheme (lower-cased) and the error
// parameter of every challenge in a WWW-Authenticate value, in order, until
// yield returns false: a value may hold several (a-dpop14 F2).
//
// The value is read as RFC 9110 section 11.6.1 writes it: a comma-separated
// list whose elements are either a challenge's start (an auth-scheme, then
// optionally a space and a token68 or its first auth-param) or another
// auth-param of the challenge under way. So a new scheme begins only at
// the start of an element: a bare word after a character no token holds
// (algs=ES256 PS256, realm=api.example.com/v1) is no scheme, and a
// parameter the client cannot read whole (an unquoted value with a space,
// a '/' or a ':' in it) is skipped to the next comma, its error, if any,
// unread (a-dpop15 F2: the word after it was taken for a scheme, and the
// DPoP challenge's error="use_dpop_nonce" for another scheme's). A parse
// the client cannot complete never invents a verdict. An element that
// starts with a token followed by a character that is neither a space, a
// comma nor "=" starts a challenge of no scheme the client knows ("").
func challengeErrors(header string, yield func(scheme, code string) bool) {
	scheme, s := "", header
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return
		}
		n := tokenLen(s)
		if n == 0 { // not a token: the element is unreadable
			s = skipElement(s)
			continue
		}
		name, after := s[:n], s[n:]
		if value, rest, ok := authParam(after); ok { // another parameter of the challenge under way
			if ascii.EqualFold(name, "error") && !yield(scheme, value) {
				return
			}
			s = rest
			continue
		} else if rest != "" {
			s = skipElement(rest) // a parameter the client cannot read whole
			continue
		}
		// A challenge starts here.
		scheme = ascii.Lower(name)
		switch {
		case after == "" || after[0] == ',':
			s = after // a scheme without parameters
			continue
		case after[0] != ' ' && after[0] != '\t':
			scheme, s = "", skipElement(after) // not a challenge the client can read
			continue
		}
		after = strings.TrimLeft(after, " \t")
		if m := token68Len(after); m > 0 {
			if t := strings.TrimLeft(after[m:], " \t"); t == "" || t[0] == ',' {
				s = t // a token68 such as "abc==": no parameter
				continue
			}
		}
		s = after // its first parameter, read as the next element
	}
}

// authParam reads "= value" at the start of s, after a parameter's name:
// BWS "=" BWS, then a token or quoted-string, then OWS and a comma or the
// end. ok says that s held one, with the value and what follows it (from
// the comma on). When s starts with "=" but the parameter cannot be read
// whole, rest is s itself, not empty: the caller skips it to the next
// comma; when s does not start with "=" (after BWS), rest is "".
func authParam(s string) (value, rest string, ok bool) {
	t := strings.TrimLeft(s, " \t")
	if t == "" || t[0] != '=' {
		return "", "", false
	}
	t = strings.TrimLeft(t[1:], " \t")
	var complete bool
	value, t, complete = paramValue(t)
	if !complete {
		return "", s, false
	}
	if t = strings.TrimLeft(t, " \t"); t != "" && t[0] != ',' {
		return "", s, false
	}
	return value, t, true
}

// skipElement returns s from its next comma on ("" when it has none): the
// rest of an element the client cannot read.
func skipElement(s string) string {
	if i := strings.IndexByte(s, ','); i >= 0 {
		return s[i:]
	}
	return ""
}

// token68Len returns the length of the RFC 9110 token68 at the start of s
// (1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="), 0 when
// there is none.
func token68Len(s string) int {
	i := 0
	for i < len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			break
		}
		i++
	}
	if i == 0 {
		return 0
	}
	for i < len(s) && s[i] == '=' {
		i++
	}
	return i
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
// s and returns it with the rest of s. complete is false when there is
// neither (an empty token) or the quoted-string is not closed.
func paramValue(s string) (value, rest string, complete bool) {
	if !strings.HasPrefix(s, `"`) {
		n := tokenLen(s)
		return s[:n], s[n:], n > 0
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
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", false
}

// CredentialError wraps a failure to attach the credential (for example to
// sign a proof). It is the client's fault, not the server's: it is not
// retried and does not count against the breaker.
type CredentialError struct {
	who Peer
	err error
}

func (e *CredentialError) Error() string {
	return e.who.Pkg() + ": cannot attach the token: " + e.err.Error()
}
func (e *CredentialError) Unwrap() error { return e.err }

// notSent is the error of an attempt not sent because the call was out
// of time (Late): it says nothing about the server, so it does not count
// against the breaker. It matches the context error.
type notSent struct{ late error }

func (e *notSent) Error() string { return "not sent: " + e.late.Error() }
func (e *notSent) Unwrap() error { return e.late }

// requestFault is the error of an attempt the client's own transport
// refused to write because its header list passes the limit its HTTP/2
// server advertised (refusedForSize): the request carried the fault, not
// the server, so one caller's token never counts against the breaker every
// caller shares (rule 11), and the attempt is not retried, since it would
// fail alike. A server that closes or resets the connection before the
// headers are written leaves the same trace, so the refusal is known by
// what it says (a-fix10). A front that closes the connection on large
// headers over HTTP/1.1, rather than answer 431, cannot be told from a dead
// gateway and counts (a known issue: a-fix10b F3, a-last10).
type requestFault struct{ err error }

func (e *requestFault) Error() string { return "the request's own fault: " + e.err.Error() }
func (e *requestFault) Unwrap() error { return e.err }

// refusedForSize reports whether err is a transport's refusal of a request
// whose header list passes the limit its HTTP/2 peer advertised
// (SETTINGS_MAX_HEADER_LIST_SIZE): net/http's and golang.org/x/net/http2's
// transports say so in these words and give the error no exported value. It
// is the one refusal of a request's own content that a token the client
// sends (CheckToken) can cause. Anything else, an EOF or a reset among them,
// may be the server's doing and counts.
func refusedForSize(err error) bool {
	return strings.Contains(err.Error(), "request header list larger than peer's advertised limit")
}

// writes follows one attempt through net/http (httptrace): whether it got
// a connection, and whether its headers were written on it. The hooks may
// run on the transport's goroutines, after the attempt returned: each
// attempt has its own.
type writes struct {
	conn, headers atomic.Bool
	trace         httptrace.ClientTrace
}

func newWrites() *writes {
	w := new(writes)
	w.trace.GotConn = func(httptrace.GotConnInfo) { w.conn.Store(true) }
	w.trace.WroteHeaders = func() { w.headers.Store(true) }
	return w
}

// authorizer attaches its credential to a clone of every attempt and
// delegates to next, like golang.org/x/oauth2's Transport. It keeps the
// latest DPoP-Nonce per origin from every answer (send), and for a DPoP
// credential answers a nonce request by sending the request once more
// with the new nonce; being below the retrier, that resend is not a retry.
//
// The rule (a-dpop13 F2): a token is retired only on an explicit verdict
// against it, a DPoP challenge saying error="invalid_token" or a 401 that
// carries no DPoP signal at all (NewResponseError). So a DPoP request is
// resent for a 401 or 400 carrying a DPoP-Nonce other than the one it
// used (nonceAsked), unless the answer's one DPoP verdict refuses the
// token (readAnswer: a challenge or the body saying invalid_token wins
// over a nonce request, a-dpop14 F2); one chain (one gateway request,
// all its attempts) resends at most once, and never for the nonce just
// refused. An answer whose body the client could not finish reading is
// never resent (a-fix15 F3). A resent answer's result keeps the more
// severe of the two readings: one refusing the token (a 401 naming no
// error, its body unclear or past MaxBody) is replaced only by a 2xx to
// the resend (a-dpop15 F1); one refusing
// nothing always gives way to the resend's answer, so a refusal of the
// token in either wins (a-fix15 F4). A Bearer request cannot owe a
// nonce and is never resent.
type authorizer struct {
	cred   Credential
	nonces *NonceStore
	next   http.RoundTripper
	sent   *atomic.Uint64
	// nonceResent is set once this request was resent for a nonce.
	nonceResent atomic.Bool
}

// RoundTrip implements http.RoundTripper.
func (a *authorizer) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.cred.Ident().Scheme != SchemeDPoP {
		return a.send(req, "")
	}
	from := origin(req.URL)
	used := a.nonces.get(from)
	resp, err := a.send(req, used)
	if err != nil {
		return resp, err
	}
	// Resend once, and never for the nonce that was just refused: a server
	// repeating it would otherwise be asked forever.
	if offered := offeredNonce(resp); offered == "" || offered == used || req.GetBody == nil || a.nonceResent.Load() {
		return resp, nil
	}
	// The body is read for the verdict (its error may refuse the token)
	// and put back for the answer's reader when there is no resend.
	data, readErr := ReadBody(resp.Body, resp.ContentLength)
	keep := func() (*http.Response, error) {
		rest := io.Reader(resp.Body)
		if readErr != nil { // the answer's reader sees the same failure (a-fix15 F3)
			rest = errReader{readErr}
		}
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(data), rest), resp.Body}
		return resp, nil
	}
	if readErr != nil { // a body not read whole is no reading: never resent on it
		return keep()
	}
	fresh, read := nonceAsked(resp, data, req.Context().Value(repeatsKey{}) != nil)
	if fresh == "" || !a.nonceResent.CompareAndSwap(false, true) {
		return keep()
	}
	body, err := req.GetBody()
	if err != nil {
		return keep()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxBody))
	_ = resp.Body.Close()
	again := req.Clone(req.Context())
	again.Body = body
	second, err := a.send(again, fresh)
	if !read.refuses(resp.StatusCode, SchemeDPoP) || err == nil && second.StatusCode >= 200 && second.StatusCode <= 299 {
		return second, err
	}
	// The result keeps the more severe of the two readings. An answer that
	// refuses nothing (a clear nonce request, an unclear 400) gives way to
	// its resend's, which refuses no less (a-fix15 F4: a resend's refusal
	// of the token was dropped for an unclear 400). One that refuses the
	// token (a 401 naming no error with an unclear body, or one past
	// MaxBody, a-dpop15 F1: its invalid_token maybe unread) is cleared by its resend's 2xx only: any other answer, or
	// none, leaves it standing, as read.
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(second.Body, MaxBody))
		_ = second.Body.Close()
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp, nil
}

// send authorizes a clone of req with the credential and nonce, and sends
// it. Every attempt, the nonce resend included, is sent here and every
// answer comes back through here: this is the one place where an answer's
// DPoP-Nonce becomes its origin's latest, whatever the answer's status and
// wherever in the retry chain it arrives (RFC 9449 section 8 lets a server
// rotate its nonce on any answer; a nonce left unread is a proof refused
// next time).
//
// Nothing is sent for a call out of time, read on the clock (Late) before
// the credential is attached and after: its context's timer may not have
// fired (a process that was frozen), and a DPoP key may have taken the
// rest of the call's time to sign.
func (a *authorizer) send(req *http.Request, nonce string) (*http.Response, error) {
	if err := Late(req.Context()); err != nil {
		closeBody(req)
		return nil, &notSent{late: err}
	}
	w := newWrites()
	r := req.Clone(httptrace.WithClientTrace(req.Context(), &w.trace))
	if err := a.cred.Authorize(r, nonce); err != nil {
		closeBody(req)
		return nil, &CredentialError{err: err}
	}
	if err := Late(req.Context()); err != nil {
		closeBody(req)
		return nil, &notSent{late: err}
	}
	a.sent.Add(1)
	resp, err := a.next.RoundTrip(r)
	switch {
	case err == nil:
		if n := dpopNonce(resp); n != "" {
			a.nonces.set(origin(req.URL), n)
		}
	case Late(req.Context()) != nil: // out of time: the call's, or the attempt's own
	case w.conn.Load() && !w.headers.Load() && refusedForSize(err):
		return nil, &requestFault{err: err}
	}
	return resp, err
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}

// errReader fails every Read with err: the failure of an answer's body
// whose first part was read, put back for the answer's reader.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// readCloser reads from Reader and closes Closer: an answer's body put
// back after part of it was read.
type readCloser struct {
	io.Reader
	io.Closer
}
