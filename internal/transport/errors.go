package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The sentinel errors of the decision clients. Package pep and package
// authzen re-export these very values, so that errors.Is works across the
// two clients (an error of either matches pep.ErrUnavailable and
// authzen.ErrUnavailable alike). Their own texts name no client: a client
// never returns one bare, but as its Peer says it (Peer.Err), in a text
// that names the client and its server ("pep: circuit breaker open",
// "authzen: PDP unavailable: ...") and that matches the sentinel.
var (
	// ErrUnauthorized is matched by the *ResponseError of a 401 that refuses
	// the token: for a DPoP request, one whose DPoP challenge says
	// error="invalid_token" (or another error than the two below), or that
	// carries no DPoP signal at all.
	ErrUnauthorized error = &sentinel{format: "unauthorized"}
	// ErrProofRejected is matched by the *ResponseError of a 401 to a DPoP
	// request that blames the proof, not the token: its DPoP challenge
	// says error="invalid_dpop_proof", or error="use_dpop_nonce" still
	// owed after the one resend, or its JSON body's "error" says so (RFC
	// 9449 section 8), and nothing in the answer refuses the token
	// (dpopVerdictOf).
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
// blames the DPoP proof) and [ErrUnavailable] for a 5xx.
//
// The text fields come from the server and are cut to 512 bytes; a field
// that held 8 or more consecutive characters of the request's token
// (verbatim, escaped, or on its letters and digits in any case) or a long
// opaque run (any other encoding of it) is withheld as a whole (Redact
// states the rule), so at most 7 characters of the token can show.
type ResponseError struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// ErrorName is the "error" field of the error body, e.g.
	// "Forbidden"; empty when the body had none.
	ErrorName string
	// Message is the "message" field of the error body, or what was wrong
	// with a 200 body.
	Message string
	// Challenge is the WWW-Authenticate header of the answer, if any.
	Challenge string
	// Err is the reason a 200 answer was unusable; it wraps
	// ErrMalformedResponse. Nil for other statuses.
	Err error

	// who names the server in Error.
	who Peer
	// dpop is what a 401 to a DPoP request blamed (dpopVerdictOf).
	dpop dpopVerdict
	// namesClient is set for a 400 whose body blames the clientId.
	namesClient bool
	// sentNone is set for a 401 to a request that carried no credential
	// (SchemeNone): Error says what to fix.
	sentNone bool
	// uncredentialed is set for an answer to a request sent without the
	// client's credential (the zero Ident): its 401 refuses no token.
	uncredentialed bool
}

// dpopVerdict is what an answer to a DPoP request blames.
type dpopVerdict uint8

const (
	dpopNone          dpopVerdict = iota // no DPoP signal: a 401 refuses the token
	dpopTokenRefused                     // invalid_token (or any error but the proof's two): the token
	dpopProofRejected                    // invalid_dpop_proof: the proof, not the token
	dpopNonceOwed                        // use_dpop_nonce, still owed after the one resend
)

// refusesToken reports whether a 401 with this verdict refuses the token.
func (v dpopVerdict) refusesToken() bool { return v == dpopNone || v == dpopTokenRefused }

// dpopVerdictOf returns the one verdict of an answer to a DPoP request,
// read from every WWW-Authenticate value (every DPoP challenge in each)
// and the "error" of its JSON body, as RFC 9449 section 8 words a nonce
// request. Both the nonce resend (authorizer) and the blame of a 401
// (NewResponseError) read it, so they never read one answer two ways
// (a-dpop14 F2). The signals are a DPoP challenge's error, another
// scheme's invalid_token (a Bearer challenge beside the DPoP one), and the body's
// error when it is one of RFC 9449's (invalid_token, invalid_dpop_proof,
// use_dpop_nonce: a server's own error names say nothing of DPoP). When
// they conflict, the one refusing the token wins, failing closed: any
// challenge error but the proof's two, or invalid_token in the body, over
// invalid_dpop_proof, over use_dpop_nonce. An answer with none carries no
// DPoP signal: its 401 refuses the token too.
func dpopVerdictOf(challenges []string, body []byte) dpopVerdict {
	verdict := dpopNone
	take := func(code string) {
		var v dpopVerdict
		switch code {
		case "":
			return
		case "invalid_dpop_proof":
			v = dpopProofRejected
		case "use_dpop_nonce":
			v = dpopNonceOwed
		default:
			v = dpopTokenRefused
		}
		if verdict == dpopNone || v < verdict {
			verdict = v
		}
	}
	for _, header := range challenges {
		challengeErrors(header, func(scheme, code string) bool {
			switch {
			case scheme == "dpop":
				take(code)
			case code == "invalid_token": // a refusal of the token, in whatever scheme, wins
				take(code)
			}
			return verdict != dpopTokenRefused
		})
	}
	bodyErrors(body, func(code string) {
		switch code {
		case "invalid_token", "invalid_dpop_proof", "use_dpop_nonce":
			take(code)
		}
	})
	return verdict
}

// bodyErrors calls yield with every string value of a top-level member
// named exactly "error" in body, a JSON object: a reader of a refusal sees
// every one of its signals (a-fix14b F1: encoding/json matched "Error" and
// "ERROR" too and kept the last of duplicates, so a later member hid an
// invalid_token). It stops at the first syntax error, having yielded what
// came before.
func bodyErrors(body []byte, yield func(code string)) {
	if len(body) == 0 {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return
		}
		var code string
		if t == "error" && json.Unmarshal(v, &code) == nil {
			yield(code)
		}
	}
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
		return e.StatusCode == http.StatusUnauthorized && e.dpop.refusesToken() && !e.uncredentialed
	case ErrProofRejected:
		return e.StatusCode == http.StatusUnauthorized && !e.dpop.refusesToken() && !e.uncredentialed
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
// ErrProofRejected. What a 401 blames is read from the raw header and
// body (dpopVerdictOf), and only for a DPoP request: a Bearer request
// cannot have a rejected proof or owe a nonce.
func (p Peer) NewResponseError(resp *http.Response, body []byte, id Ident) *ResponseError {
	var eb struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &eb) // best effort: the status says enough
	challenge := strings.Join(resp.Header.Values("WWW-Authenticate"), ", ")
	e := &ResponseError{
		StatusCode: resp.StatusCode,
		ErrorName:  Redact(eb.Error, id.Token),
		Message:    Redact(eb.Message, id.Token),
		Challenge:  Redact(challenge, id.Token),
		who:        p,
	}
	if id.Scheme == SchemeDPoP && resp.StatusCode == http.StatusUnauthorized {
		e.dpop = dpopVerdictOf(resp.Header.Values("WWW-Authenticate"), body)
	}
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
