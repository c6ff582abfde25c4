package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The sentinel errors of the decision clients. Package pep and package
// authzen re-export these very values, so that errors.Is works across the
// two clients (an error of either matches pep.ErrUnavailable and
// authzen.ErrUnavailable alike). Their own texts name no client: a client
// never returns one bare, but as its Peer says it (Peer.Err), in a text
// that names the client and its server ("pep: circuit breaker open",
// "authzen: PDP unavailable: ...") and that matches the sentinel.
var (
	// ErrUnauthorized is matched by the *ResponseError of an answer that
	// refuses the token (readAnswer): a 401, for a DPoP request one whose
	// DPoP challenge says error="invalid_token" (or another error than the
	// two below), or that carries no DPoP signal at all, or whose body,
	// as the server finished it, could not be read whole (a body the
	// client could not finish reading refuses the token only when what
	// came does: cutRefuses, a-fix15 F3); and a 400 or 403 that names
	// invalid_token, in any challenge or its body (a-dpop15 F3). The word
	// refuses nothing when what the request sent may spell it itself: the
	// answer may be repeating the request (readAnswer, echoable; a-read17,
	// a-fix17, a-fix17c).
	ErrUnauthorized error = &sentinel{format: "unauthorized"}
	// ErrProofRejected is matched by the *ResponseError of a 401 to a DPoP
	// request that blames the proof, not the token: its DPoP challenge
	// says error="invalid_dpop_proof", or error="use_dpop_nonce" still
	// owed after the one resend, or its JSON body's "error" says so (RFC
	// 9449 section 8), and nothing in the answer refuses the token
	// (readAnswer).
	ErrProofRejected error = &sentinel{format: "DPoP proof rejected"}
	// ErrNoToken is returned, without any request being sent, when a call
	// has no usable token.
	ErrNoToken error = &sentinel{format: "no token"}
	// ErrUnavailable is matched by the Cause of a decision denied because the
	// server could not be reached or did not answer in time (Late), or a
	// DPoP key not held in memory did not sign in time (signingError), by
	// ErrCircuitOpen, and by a *ResponseError with a 5xx status.
	ErrUnavailable error = &sentinel{format: "%s unavailable"}
	// ErrCircuitOpen is the Cause of a decision denied without a request
	// because the circuit breaker is open. It matches ErrUnavailable.
	ErrCircuitOpen error = &sentinel{format: "circuit breaker open", parent: ErrUnavailable}
	// ErrMalformedResponse is wrapped by the Err of a *ResponseError for a
	// 200 answer the client could not use.
	ErrMalformedResponse error = &sentinel{format: "malformed %s response"}
	// ErrClosed is returned by every call of a client after its Close.
	ErrClosed error = &sentinel{format: "the client is closed; calls after Close fail, make a new client with New"}
	// ErrTokenChanged is the Cause of a decision denied because the
	// client's own token was replaced or cleared while the call that used
	// it was under way (see Held). It does not match ErrUnavailable: the
	// server is not at fault, and the breaker does not count it.
	ErrTokenChanged error = &sentinel{format: "the client's token changed while the call was under way; ask again"}
)

// sentinel is a shared sentinel error. format is its text with %s standing
// for the server ("server" in the sentinel's own text, a Peer's server in
// what the Peer says); parent is a more general sentinel it also matches.
type sentinel struct {
	format string
	parent error
}

func (e *sentinel) Error() string { return e.text("server") }
func (e *sentinel) Unwrap() error { return e.parent }

func (e *sentinel) text(server string) string {
	if strings.Contains(e.format, "%s") {
		return fmt.Sprintf(e.format, server)
	}
	return e.format
}

// spoken is a sentinel as a Peer says it: its text names the client and
// its server, and it matches the sentinel.
type spoken struct {
	text     string
	sentinel error
}

func (e *spoken) Error() string { return e.text }
func (e *spoken) Unwrap() error { return e.sentinel }

// Peer names the server a client talks to, and the package that speaks of
// it, in the texts of its errors and log lines: "pep: gateway",
// "authzen: PDP". The zero Peer is pep's gateway, so that a ResponseError
// made by a user reads as it always did.
type Peer string

// String returns the peer's name, pep's gateway for the zero Peer.
func (p Peer) String() string {
	if p == "" {
		return "pep: gateway"
	}
	return string(p)
}

// Pkg returns the package part of the peer's name ("pep").
func (p Peer) Pkg() string {
	pkg, _, _ := strings.Cut(p.String(), ": ")
	return pkg
}

// Server returns the server part of the peer's name ("gateway").
func (p Peer) Server() string {
	_, server, _ := strings.Cut(p.String(), ": ")
	return server
}

// Err returns err, one of this package's sentinels, as p says it: "pep:
// circuit breaker open", "authzen: PDP unavailable". It matches err (and
// what err matches); any other err is returned as it is.
func (p Peer) Err(err error) error {
	s, ok := err.(*sentinel)
	if !ok {
		return err
	}
	return &spoken{text: p.Pkg() + ": " + s.text(p.Server()), sentinel: err}
}

// ResponseError describes an answer the client could not take as a
// decision: any status other than 200, or a 200 whose body was unusable (Err
// then wraps [ErrMalformedResponse]). Inspect it with errors.As; errors.Is
// matches [ErrUnauthorized] for a 401 (or [ErrProofRejected] when the 401
// blames the DPoP proof) or a 400 or 403 naming invalid_token, and
// [ErrUnavailable] for a 5xx.
//
// The text fields come from the server and are cut to 512 bytes; a field
// that held 8 or more consecutive characters of the request's token
// (verbatim, escaped, or on its letters and digits in any case) or a long
// opaque run (any other encoding of it) is withheld as a whole (Redact
// states the rule), so at most 7 characters of the token can show.
type ResponseError struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// ErrorName is the error the answer names: the code its verdict on
	// the credential was read from (a challenge's or the body's
	// invalid_token, invalid_dpop_proof, use_dpop_nonce), else the first
	// member named exactly "error" of its JSON body, e.g. "Forbidden";
	// empty when it had none. It never names a proof or nonce error of an
	// answer that refuses the token.
	ErrorName string
	// Message is the first member named exactly "message" of the error
	// body, or what was wrong with a 200 body.
	Message string
	// Challenge is the WWW-Authenticate header of the answer, if any.
	Challenge string
	// Err is the reason a 200 answer was unusable; it wraps
	// ErrMalformedResponse. Nil for other statuses.
	Err error

	// who names the server in Error.
	who Peer
	// refused says that the answer refuses the request's token, and
	// proofRejected that it is a DPoP request's 401 blaming the proof (or
	// a nonce still owed) instead: both from its one reading
	// (readAnswer, reading.refuses).
	refused, proofRejected bool
	// read is set by NewResponseError; a ResponseError a user makes is
	// read by its status alone (a 401 refuses the token).
	read bool
	// unclear says that the body could not be read whole (reading).
	unclear bool
	// namesClient is set for a 400 whose body blames the clientId.
	namesClient bool
	// sentNone is set for a 401 to a request that carried no credential
	// (SchemeNone): Error says what to fix.
	sentNone bool
	// uncredentialed is set for an answer to a request sent without the
	// client's credential (the zero Ident): its 401 refuses no token.
	uncredentialed bool
}

// dpopVerdict is what an answer blames, of the token and its DPoP proof.
type dpopVerdict uint8

const (
	dpopNone          dpopVerdict = iota // no signal: a 401 (to a DPoP request) refuses the token
	dpopTokenRefused                     // invalid_token (or, in a 401's DPoP challenge, any error but the proof's two): the token
	dpopProofRejected                    // invalid_dpop_proof: the proof, not the token
	dpopNonceOwed                        // use_dpop_nonce, still owed after the one resend
)

// refusesToken reports whether a 401 with this verdict refuses the token.
func (v dpopVerdict) refusesToken() bool { return v == dpopNone || v == dpopTokenRefused }

// credentialStatus reports whether an answer of this status can carry a
// credential error (RFC 6750 section 3.1, RFC 9449 sections 7.1 and 8):
// 400, 401 and 403.
func credentialStatus(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusUnauthorized || status == http.StatusForbidden
}

// reading is the one reading of an answer: its verdict, what its body
// says and whether the body could be read at all. readAnswer makes it;
// the nonce resend (authorizer), the blame (NewResponseError, then
// errors.Is and the purge of a refused token) and the error's text
// (ErrorName) all read this one value, so that no two of them read an
// answer two ways (a-dpop14 F2, a-dpop15 F1, F3, F5).
type reading struct {
	// verdict is what the answer's signals blame; code is the error it
	// was read from ("" for dpopNone).
	verdict dpopVerdict
	code    string
	// unclear says that the body, as the server sent and finished it,
	// could not be read whole and unambiguously: a JSON object with a
	// syntax error or cut short, or a body past MaxBody. Its members after
	// the fault are unknown (its error and message are not read), but
	// every byte of it within MaxBody was searched for invalid_token. A
	// body the client could not finish reading is never read as unclear
	// (cutRefuses, a-fix15 F3).
	unclear bool
	// unseen says that the body passed MaxBody: its end was never read,
	// so it may refuse the token where no search looked.
	unseen bool
	// errorName and message are the first top-level string members named
	// exactly "error" and "message" of a JSON object body.
	errorName, message string
}

// readAnswer reads an answer of status (challenge, its WWW-Authenticate
// field as Challenges joins it, and its body) once, for every client and
// scheme.
//
// The signals are the error of every challenge (challengeErrors) and every
// top-level member named exactly "error" in the body (a-fix14b F1:
// encoding/json matched "Error" and "ERROR" too and kept the last of
// duplicates, so a later member hid an invalid_token), read as RFC 9449
// and RFC 6750 word them: invalid_token, in any challenge or the body,
// refuses the token; a DPoP challenge's or the body's invalid_dpop_proof
// blames the proof and use_dpop_nonce asks a nonce; in a 401, a DPoP
// challenge's other errors refuse the token too (a 403's
// insufficient_scope does not: it is no verdict on the token). When they
// conflict, the one refusing the token wins, failing closed, over
// invalid_dpop_proof, over use_dpop_nonce. A server's own error names
// ("Unauthorized") say nothing of DPoP.
//
// A UTF-8 byte order mark before the body is skipped (a-dpop15 F2: it made
// the body say nothing). A body that is a JSON object the client cannot
// read whole (a raw control character in a string, a leading-zero number,
// a cut, anything after its end) or that passes MaxBody is unclear
// (a-dpop15 F1: the members after the fault were lost, an invalid_token
// among them).
//
// A JSON object read whole refuses the token when any of its strings, at
// any depth, is exactly "invalid_token" (its escapes decoded): a nested
// error object or a list of errors names the code as a string of its own
// (a-dpop16 F1: `{"error":{"code":"invalid_token"}}` refused nothing,
// while the same bytes cut short refused the token), and a message that
// merely mentions the word, as one repeating what a caller asked may, is
// no code. Any other body (no JSON object, or one not read whole) refuses
// the token when it holds "invalid_token" anywhere, as raw bytes or as a
// JSON reader would see it with its string escapes decoded (a-fix15 F2:
// "invalid\u005ftoken"): what could not be read is taken at its word,
// failing closed.
//
// When the request itself named invalid_token (repeats: a caller's
// resource, scope or context may be any word), the word refuses nothing,
// wherever the answer says it: a gateway repeating the caller's words
// back, as a value of its own or in text in the body (a-read17 F1, F2), or
// unescaped into a challenge's attributes (a-fix17 F4: a scope
// `read", error="invalid_token`), would otherwise let any caller who
// chooses it retire a token the client shares between callers. Only the
// status then refuses: a 401 (for a DPoP request, one naming no other
// DPoP error).
func readAnswer(status int, challenge string, body []byte, repeats bool) reading {
	past := len(body) > MaxBody // as it came, before any re-encoding
	body = utf8Of(body)
	var r reading
	take := func(code string, v dpopVerdict) {
		if r.verdict == dpopNone || v < r.verdict {
			r.verdict, r.code = v, code
		}
	}
	challengeErrors(challenge, func(scheme, code string) bool {
		switch {
		case code == "invalid_token": // a refusal of the token, in whatever scheme
			if !repeats {
				take(code, dpopTokenRefused)
			}
		case scheme != "dpop" || code == "":
		case code == "invalid_dpop_proof":
			take(code, dpopProofRejected)
		case code == "use_dpop_nonce":
			take(code, dpopNonceOwed)
		case status == http.StatusUnauthorized:
			take(code, dpopTokenRefused)
		}
		return r.verdict != dpopTokenRefused
	})
	whole := readBody(body, past, &r, func(code string) {
		switch code {
		case "invalid_token":
			if !repeats {
				take(code, dpopTokenRefused)
			}
		case "invalid_dpop_proof":
			take(code, dpopProofRejected)
		case "use_dpop_nonce":
			take(code, dpopNonceOwed)
		}
	})
	if !repeats && (whole && holdsString(body, "invalid_token") ||
		!whole && (bytes.Contains(body, invalidToken) || bytes.Contains(jsonUnescaped(body), invalidToken))) {
		take("invalid_token", dpopTokenRefused)
	}
	return r
}

// holdsString reports whether body, a JSON object read whole (readBody),
// holds the string s at any depth, as a member's value, an element of a
// list or a member's name: a refusal's code stands as a string of its own,
// whatever the error's shape, while text that merely mentions it (a
// message repeating what the request asked) is no code.
func holdsString(body []byte, s string) bool {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(body, utf8BOM)))
	for {
		t, err := dec.Token()
		if err != nil {
			return err != io.EOF // read whole before: an error here fails closed
		}
		if v, ok := t.(string); ok && v == s {
			return true
		}
	}
}

var invalidToken = []byte("invalid_token")

// repeatsKey marks the context of a request whose body names
// invalid_token (withWords), for the nonce resend (nonceAsked), which
// reads the request it sends; the exchange passes the same fact in the
// Ident it reads answers with (Ident.Echoable), never through the answer's
// Request, which a user's transport may rebuild or leave nil (a-fix17 F2).
type repeatsKey struct{}

// withWords returns req, marked when what it sends may name invalid_token
// to a server that repeats it (echoable), so that no answer to it is read
// as refusing the token by the word (readAnswer's repeats). Most requests
// never do, and are returned themselves.
func withWords(req *http.Request, echoable bool) *http.Request {
	if !echoable {
		return req
	}
	return req.WithContext(context.WithValue(req.Context(), repeatsKey{}, true))
}

// echoable reports whether a request sending body with header may name
// invalid_token to a server that repeats what it was sent, however the
// server or the client's reader decodes it on the way (a-fix17 F1, F5;
// a-fix17c F1, F2, F5): its letters, lower-cased and read with whatever
// stands between them left out (separators, NUL bytes of UTF-16, the
// backslash of a quoted-pair), spell "invalidtoken" (namesInvalidToken),
// as sent or once JSON escapes and percent-escapes are undone, in any
// order, up to three times each, and Unicode lower case applied (a Kelvin
// sign for the k). Every header value counts too: a caller's tracestate
// or baggage is forwarded (a-fix17 F8). The decoded forms are made only
// for text that holds an escape or a byte past ASCII; the common request
// allocates nothing (a-fix17c F3).
func echoable(body []byte, header http.Header) bool {
	if spells(body) {
		return true
	}
	for _, vs := range header {
		for _, v := range vs {
			if spells(v) {
				return true
			}
		}
	}
	return false
}

// spells is echoable's reading of one text.
func spells[T string | []byte](b T) bool {
	if namesInvalidToken(b) {
		return true
	}
	if !escapedOrBeyondASCII(b) {
		return false
	}
	x := []byte(b)
	for range 3 {
		x = bytes.ToLower(percentDecoded(jsonUnescaped(x)))
		if namesInvalidToken(x) {
			return true
		}
	}
	return false
}

// escapedOrBeyondASCII reports whether b holds a backslash, a percent
// sign or a byte past ASCII.
func escapedOrBeyondASCII[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if c := b[i]; c == '\\' || c == '%' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// percentDecoded returns b with every %XX escape undone.
func percentDecoded(b []byte) []byte {
	if bytes.IndexByte(b, '%') < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+2 < len(b) {
			if v, err := strconv.ParseUint(string(b[i+1:i+3]), 16, 8); err == nil {
				out = append(out, byte(v))
				i += 2
				continue
			}
		}
		out = append(out, b[i])
	}
	return out
}

// namesInvalidToken reports whether the ASCII letters of b, lower-cased
// and read with every other byte between them left out, spell
// "invalidtoken": the word in any case, whatever separates or escapes its
// letters (invalid_token, INVALID-TOKEN, invalid\\u005ftoken,
// invalid%5Ftoken, i\x00n\x00v...). A request that so spells it for
// another reason loses only its answers' word as a refusal.
func namesInvalidToken[T string | []byte](b T) bool {
	const word = "invalidtoken"
	m := 0 // letters of word matched
	for i := 0; i < len(b); i++ {
		c := b[i] | 0x20
		if c < 'a' || c > 'z' || b[i] >= utf8.RuneSelf {
			continue
		}
		for m > 0 && word[m] != c {
			m = wordFail[m-1]
		}
		if word[m] == c {
			m++
		}
		if m == len(word) {
			return true
		}
	}
	return false
}

// wordFail is the failure table of "invalidtoken" (Knuth-Morris-Pratt):
// wordFail[j] is the length of the longest proper prefix of its first j+1
// letters that is also their suffix.
var wordFail = func() [len("invalidtoken")]int {
	const word = "invalidtoken"
	var f [len(word)]int
	for i, k := 1, 0; i < len(word); i++ {
		for k > 0 && word[i] != word[k] {
			k = f[k-1]
		}
		if word[i] == word[k] {
			k++
		}
		f[i] = k
	}
	return f
}()

// Challenges returns the WWW-Authenticate field of h as one value: all its
// field lines joined with ", ". RFC 9110 section 5.3 lets a list field be
// split over several lines at any comma, and the lines mean the same as
// their values so joined; a challenge's parameters may so start a line of
// their own. Every reader of the field reads this value, never a line
// alone (a-fix15 F1: a parameter starting a line belonged to no scheme).
func Challenges(h http.Header) string {
	return strings.Join(h.Values("WWW-Authenticate"), ", ")
}

// jsonUnescaped returns b with every JSON string escape decoded, left to
// right as a JSON reader decodes them (`\\u005f` is a backslash and
// "u005f", a surrogate pair such as `\ud83d\ude00` one rune): what a JSON reader would
// see of a body it could not read whole (a-fix15 F2: an escaped
// "invalid\u005ftoken" hid from a raw search). An escape it cannot decode
// is kept as it is. b itself is returned when it holds no backslash.
func jsonUnescaped(b []byte) []byte {
	if bytes.IndexByte(b, '\\') < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
			i++
		case 'b', 'f', 'n', 'r', 't':
			out = append(out, "\b\f\n\r\t"[strings.IndexByte("bfnrt", e)])
			i++
		case 'u':
			r, ok := hex4(b[i+2:])
			if !ok {
				out = append(out, b[i])
				continue
			}
			i += 5
			if utf16.IsSurrogate(r) && len(b) > i+2 && b[i+1] == '\\' && b[i+2] == 'u' {
				if r2, ok := hex4(b[i+3:]); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					}
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			out = append(out, b[i])
		}
	}
	return out
}

// hex4 reads the four hex digits of a \u escape at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}

// utf8BOM is the byte order mark some servers put before a JSON body.
var utf8BOM = []byte("\ufeff")

// utf8Of returns body in UTF-8: body itself, or, when it is UTF-16 or
// UTF-32 text, that text re-encoded (a-read17 F3, a-fix17 F3: a refusal so
// written was searched as UTF-8 bytes and refused nothing, and the revoked
// token's GRANTs stayed served). The encoding is told by a byte order mark
// or, as RFC 4627 section 3 does, by the zero bytes around the first
// character (JSON's is ASCII; UTF-8 text has no zero byte there). Bytes
// that end no unit are dropped.
func utf8Of(body []byte) []byte {
	var order binary.ByteOrder = binary.LittleEndian
	width, skip := 0, 0
	switch b := append(body[:min(len(body), 4):min(len(body), 4)], 1, 1, 1, 1); {
	case b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF:
		order, width, skip = binary.BigEndian, 4, 4
	case b[0] == 0xFF && b[1] == 0xFE && b[2] == 0 && b[3] == 0:
		width, skip = 4, 4
	case b[0] == 0xFE && b[1] == 0xFF:
		order, width, skip = binary.BigEndian, 2, 2
	case b[0] == 0xFF && b[1] == 0xFE:
		width, skip = 2, 2
	case b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] != 0:
		order, width = binary.BigEndian, 4
	case b[0] != 0 && b[1] == 0 && b[2] == 0 && b[3] == 0:
		width = 4
	case b[0] == 0 && b[1] != 0 && b[2] == 0 && b[3] != 0:
		order, width = binary.BigEndian, 2
	case b[0] != 0 && b[1] == 0 && b[2] != 0 && b[3] == 0:
		width = 2
	default:
		return body
	}
	var out []byte
	if width == 4 {
		for i := skip; i+3 < len(body); i += 4 {
			out = utf8.AppendRune(out, rune(order.Uint32(body[i:])))
		}
		return out
	}
	units := make([]uint16, 0, (len(body)-skip)/2)
	for i := skip; i+1 < len(body); i += 2 {
		units = append(units, order.Uint16(body[i:]))
	}
	for _, r := range utf16.Decode(units) {
		out = utf8.AppendRune(out, r)
	}
	return out
}

// readBody reads body, a JSON object, once: it sets r's errorName and
// message and calls yield with every string value of a top-level member
// named exactly "error". It sets r.unclear for an object it cannot read
// whole or a body past MaxBody as it came (past, and r.unseen for it: a
// re-encoded body's own length says nothing, a-fix17 F6), and reports
// whether it read the body whole as a JSON object; an empty body, or one
// that is no JSON object, is not unclear (it carries no JSON signal) but
// is not read whole either.
func readBody(body []byte, past bool, r *reading, yield func(code string)) (whole bool) {
	if past {
		r.unclear, r.unseen = true, true
	}
	data := bytes.TrimLeft(bytes.TrimPrefix(body, utf8BOM), " \t\r\n")
	if len(data) == 0 || data[0] != '{' {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the '{'
		r.unclear = true
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			r.unclear = true
			return false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			r.unclear = true
			return false
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			continue
		}
		switch t {
		case "error":
			if r.errorName == "" {
				r.errorName = s
			}
			yield(s)
		case "message":
			if r.message == "" {
				r.message = s
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the '}'
		r.unclear = true
		return false
	}
	if _, err := dec.Token(); err != io.EOF { // nothing after the object
		r.unclear = true
	}
	return !r.unclear
}

// refuses reports whether an answer of status with this reading refuses
// the token of a request sent with scheme: a 401 to a request that is not
// a DPoP one; a DPoP request's 401 whose verdict is against the token, or
// that carries no signal, or whose body passed MaxBody unread (unseen);
// any 400 or 403 whose verdict refuses the token (it names invalid_token).
// A body that is merely unclear refuses nothing of itself: it was searched
// whole for invalid_token (a-dpop16 F2: a nonce request with a raw tab in
// its message retired a valid token when its resend met a 503).
func (r reading) refuses(status int, scheme Scheme) bool {
	switch status {
	case http.StatusUnauthorized:
		return scheme != SchemeDPoP || r.verdict.refusesToken() || r.unseen
	case http.StatusBadRequest, http.StatusForbidden:
		return r.verdict == dpopTokenRefused
	}
	return false
}

// resendable reports whether a DPoP request's answer of status (a 401 or a
// 400) that carries a new DPoP-Nonce may be resent once with it: unless
// its verdict refuses the token; a 401 only when it blames the proof or
// asks a nonce, or its body is unclear (its use_dpop_nonce may be among
// the members not read; a 401 that names no DPoP error refuses the token
// and is not resent: a-fix14b F2). The result of a resend keeps the more
// severe reading (authorizer): an answer refusing the token (an unclear
// 401 with no signal, or one past MaxBody) is cleared only by a 2xx to
// the resend, and one refusing nothing gives way to the resend's answer
// (a-fix15 F4).
func (r reading) resendable(status int) bool {
	if r.verdict == dpopTokenRefused {
		return false
	}
	if status == http.StatusUnauthorized {
		return r.verdict != dpopNone || r.unclear
	}
	return true
}

// errorNameFor is the error an answer with reading r names (ErrorName): the
// code its verdict was read from when that verdict decides the answer,
// else the body's first "error" member; never a proof or nonce error of an
// answer that refuses the token (a-dpop15 F5: the text named the opposite
// of what the client did).
func (r reading) errorNameFor(refuses bool, scheme Scheme) string {
	name := r.errorName
	if r.code != "" && (scheme == SchemeDPoP || r.verdict == dpopTokenRefused) {
		name = r.code
	}
	if refuses && (name == "use_dpop_nonce" || name == "invalid_dpop_proof") {
		return ""
	}
	return name
}

// cutRefuses reports whether a 401, 400 or 403 whose body the client could
// not finish reading (data is what came) refuses the token of id all the
// same: a 401 by its status alone for a request that is not a DPoP one, or
// any of them by an explicit invalid_token (or, in a 401's DPoP challenge,
// another error than the proof's two) in its challenges or in what came of
// its body. What was not read may hold any signal, so the cut itself, and
// a DPoP request's 401 with no signal in what came, refuse nothing
// (a-fix15 F3); a refusal that came is never hidden by the cut.
func cutRefuses(resp *http.Response, data []byte, id Ident) bool {
	if id.Scheme != SchemeDPoP && resp.StatusCode == http.StatusUnauthorized {
		return true
	}
	return readAnswer(resp.StatusCode, Challenges(resp.Header), data, id.Echoable).verdict == dpopTokenRefused
}

// Error returns "<peer> answered <status>" followed by the error name and
// message. It never contains a token.
func (e *ResponseError) Error() string {
	var b strings.Builder
	b.WriteString(e.who.String())
	b.WriteString(" answered ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	text := http.StatusText(e.StatusCode)
	if text != "" {
		b.WriteString(" " + text)
	}
	if e.ErrorName != "" && e.ErrorName != text {
		b.WriteString(" (" + e.ErrorName + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.unclear {
		b.WriteString(" (the body could not be read whole)")
	}
	if e.Err != nil { // the package prefix is written once
		b.WriteString(": " + strings.TrimPrefix(e.Err.Error(), e.who.Pkg()+": "))
	}
	if e.sentNone {
		b.WriteString("; the request carried no credential (the client was made WithoutCredentials) and the " +
			e.who.Server() + " wants one: drop WithoutCredentials and give the client a token")
	}
	return b.String()
}

// Is reports whether the answer matches target: ErrUnauthorized for a 401
// that refuses the token, ErrProofRejected for a 401 that refuses the DPoP
// proof (a rejected proof, or a nonce still owed: no verdict on the token),
// ErrUnavailable for a 5xx. A 401 to a request sent without the client's
// credential matches neither credential sentinel.
func (e *ResponseError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		if !e.read {
			return e.StatusCode == http.StatusUnauthorized
		}
		return e.refused && !e.uncredentialed
	case ErrProofRejected:
		return e.proofRejected && !e.uncredentialed
	case ErrUnavailable:
		return e.StatusCode >= 500 && e.StatusCode <= 599
	}
	return false
}

// Unwrap returns Err.
func (e *ResponseError) Unwrap() error { return e.Err }

// NamesClient reports whether e is a 400 whose body blames the clientId.
func NamesClient(e *ResponseError) bool { return e.namesClient }

// namesClient reports whether a 400 error body blames the clientId: the
// service's shape names the field in details, other gateways in the message.
func namesClient(body []byte) bool {
	var eb struct {
		Message string `json:"message"`
		Details []struct {
			Field string `json:"field"`
		} `json:"details"`
	}
	if json.Unmarshal(body, &eb) != nil {
		return false
	}
	for _, d := range eb.Details {
		if strings.EqualFold(d.Field, "clientId") {
			return true
		}
	}
	return strings.Contains(strings.ToLower(eb.Message), "client")
}

// NewResponseError turns a non-200 answer into a *ResponseError whose
// texts hold nothing of the token (Redact). id is the credential the
// request was sent with: the zero Ident for one sent without the client's
// credential (a discovery document), whose 401 says nothing of the token
// or its proof and so matches neither ErrUnauthorized nor
// ErrProofRejected. What an answer that can carry a credential error (400,
// 401, 403) blames is read from the raw header and body once (readAnswer,
// the reading the nonce resend reads too), and ErrorName names what it
// chose. Only a DPoP request's 401 can blame the proof: a Bearer request
// cannot have a rejected proof or owe a nonce.
func (p Peer) NewResponseError(resp *http.Response, body []byte, id Ident) *ResponseError {
	challenges := Challenges(resp.Header)
	var r reading
	if credentialStatus(resp.StatusCode) {
		r = readAnswer(resp.StatusCode, challenges, body, id.Echoable)
	} else {
		readBody(body, len(body) > MaxBody, &r, func(string) {}) // its error and message only
	}
	refused := credentialStatus(resp.StatusCode) && r.refuses(resp.StatusCode, id.Scheme)
	name := r.errorNameFor(refused && id.Scheme != 0, id.Scheme)
	e := &ResponseError{
		StatusCode: resp.StatusCode,
		ErrorName:  Redact(name, id.Token),
		Message:    Redact(r.message, id.Token),
		Challenge:  Redact(challenges, id.Token),
		who:        p,
		refused:    refused,
		read:       true,
		unclear:    r.unclear,
	}
	e.proofRejected = resp.StatusCode == http.StatusUnauthorized && id.Scheme == SchemeDPoP && !refused
	e.namesClient = resp.StatusCode == http.StatusBadRequest && namesClient(body)
	e.sentNone = resp.StatusCode == http.StatusUnauthorized && id.Scheme == SchemeNone
	e.uncredentialed = id.Scheme == 0
	if e.Message == "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		e.Message = "redirects are not followed"
	}
	return e
}

// Malformed is the Cause of a decision (or a request) whose 200 answer was
// unusable. Its arguments are the client's own words and numbers, never
// text from the answer.
func (p Peer) Malformed(format string, args ...any) *ResponseError {
	return &ResponseError{
		StatusCode: http.StatusOK,
		Err:        fmt.Errorf("%w: "+format, append([]any{p.Err(ErrMalformedResponse)}, args...)...),
		who:        p,
	}
}
