package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Text that the gateway or the transport produced can hold the token (a
// gateway echoing the request, a malformed response quoted by net/http).
// Two rules keep it out of every error string and log line:
//
//   - gateway text reaches an error only through Redact, which withholds
//     the whole text (Redact says exactly when) if it holds 8 consecutive
//     characters of the token (verbatim, escaped once or several times,
//     truncated, quoted, in another case) or any long opaque run, which is
//     what any other encoding of a token (base64, hex, character entities)
//     looks like;
//   - transport errors reach an error only as a fixed description of their
//     kind (transportError); their own text is never kept.
//
// What can pass is a fragment of at most 7 characters of the token, in a
// text with no long opaque run: a few dozen bits of a token of hundreds of
// characters, never enough to use it. Withholding shorter fragments would
// withhold honest messages: 4 characters of a token match an English word
// often.

// fragmentLen is the shortest run of the token that counts as an echo of
// it. Eight characters of a token make a false match in a 512-byte text
// about once in ten million, and a false match only hides a message. The
// README and ResponseError's documentation state this number.
const fragmentLen = 8

// maxOpaqueRun is the longest run of characters without white space that
// gateway text may hold: a human message is made of words; a token, its
// base64, hex or escaped forms are long runs. 32 characters keep every word
// and challenge parameters such as error="invalid_dpop_proof", and withhold
// any encoding of more than 24 bytes of a token.
const maxOpaqueRun = 32

// maxErrorText bounds each text field copied from a gateway answer.
const maxErrorText = 512

// maxScannedText is how much of a gateway text Redact reads: enough to fill
// maxErrorText after runs of white space are made single.
const maxScannedText = 4 * maxErrorText

// redactedText replaces gateway text that could hold the token.
const redactedText = "[withheld: the gateway's text could hold the token]"

// Redact prepares text from the gateway for an error. It examines the
// first maxScannedText (2048) bytes and returns the fixed redactedText
// instead of the text when any of these holds:
//
//   - it is not plain text: invalid UTF-8, or control characters other
//     than tab, CR and LF (nothing is removed from it, since what a
//     removal joins could be an echo);
//   - it holds fragmentLen (8) consecutive characters of the token, or all
//     of a token shorter than that, compared two ways: exactly, and on
//     ASCII letters and digits alone without case (so "Ab-Cd" in the token
//     matches "abcd" anywhere in the text's letters and digits), in the
//     text as it is and with up to four layers of %XX, \xXX, \uXXXX and
//     &#...; escapes undone;
//   - it holds a run of more than maxOpaqueRun (32) characters without
//     white space, or consecutive words that look like pieces of an
//     encoding (hex digits alone, or any word with a digit) adding up to
//     more than 32 characters.
//
// Otherwise runs of white space become one space and the text is cut to
// maxErrorText (512) bytes. So a fragment of up to 7 characters of the
// token can be shown; nothing longer.
func Redact(text, token string) string {
	// Only what could be shown is examined, so that the cost is bounded
	// whatever the gateway sends: words of the shown text, and the escapes
	// and folds of it.
	if len(text) > maxScannedText {
		text = text[:maxScannedText]
		for !utf8.ValidString(text) && len(text) > maxScannedText-utf8.UTFMax {
			text = text[:len(text)-1] // a rune cut at the end is not the gateway's doing
		}
	}
	if !utf8.ValidString(text) || strings.ContainsFunc(text, func(r rune) bool {
		return (r < 0x20 || r == 0x7f) && r != '\t' && r != '\n' && r != '\r'
	}) {
		return redactedText
	}
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return ""
	}
	if opaque(text) || echoes(text, token) {
		return redactedText
	}
	if len(text) > maxErrorText {
		text = strings.ToValidUTF8(text[:maxErrorText], "") + "..."
	}
	return text
}

// opaque reports whether text holds a run of more than maxOpaqueRun
// characters without white space, or words that read as pieces of one
// encoding (a hex dump "42 65 61 72", base64 cut into short lines): a run
// of words made of hex digits alone, or holding a digit, whose characters
// add up to more than maxOpaqueRun. Human messages are made of words
// without digits; what this withholds by mistake is a message quoting ids.
func opaque(text string) bool {
	coded := 0
	for w := range strings.FieldsSeq(text) {
		if len(w) > maxOpaqueRun {
			return true
		}
		if !encodingPiece(w) {
			coded = 0
			continue
		}
		if coded += len(w); coded > maxOpaqueRun {
			return true
		}
	}
	return false
}

// encodingPiece reports whether word could be a piece of an encoded token:
// hex digits alone (with an optional 0x or \x), or a word with a digit.
func encodingPiece(word string) bool {
	w := strings.ToLower(word)
	w = strings.TrimPrefix(strings.TrimPrefix(w, "0x"), `\x`)
	hex, digit := w != "", false
	for i := 0; i < len(w); i++ {
		c := w[i]
		isDigit := c >= '0' && c <= '9'
		digit = digit || isDigit
		hex = hex && (isDigit || c >= 'a' && c <= 'f')
	}
	return hex || digit
}

// echoes reports whether text, as it is or with its escapes undone, holds
// fragmentLen consecutive characters of the token (or all of a shorter
// token), compared two ways: exactly, and on letters and digits alone
// without case, so that no quoting, escaping or case change hides an echo.
func echoes(text, token string) bool {
	if token == "" {
		return false
	}
	views := []string{text}
	for v, i := text, 0; i < 4; i++ { // undo up to four layers of escaping
		u := unescape(v)
		if u == v {
			break
		}
		views = append(views, u)
		v = u
	}
	for _, fold := range []func(string) string{strings.TrimSpace, alnumFold} {
		t := fold(token)
		if t == "" {
			continue
		}
		n := min(fragmentLen, len(t))
		grams := make(map[string]struct{}, len(t)-n+1)
		for i := 0; i+n <= len(t); i++ {
			grams[t[i:i+n]] = struct{}{}
		}
		for _, v := range views {
			s := fold(v)
			for i := 0; i+n <= len(s); i++ {
				if _, ok := grams[s[i:i+n]]; ok {
					return true
				}
			}
		}
	}
	return false
}

// alnumFold returns the ASCII letters (lower-cased) and digits of s.
func alnumFold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		}
	}
	return b.String()
}

// unescape undoes one layer of %XX, \xXX, \uXXXX, &#NN; and &#xHH;
// escapes, keeping anything that is not a well-formed escape.
func unescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if r, n := escapeAt(s[i:]); n > 0 {
			b.WriteRune(r)
			i += n
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// escapeAt decodes an escape at the start of s and returns the character
// and the escape's length, or 0 when s starts with none.
func escapeAt(s string) (rune, int) {
	hex := func(digits string) (rune, bool) {
		v, err := strconv.ParseUint(digits, 16, 32)
		return rune(v), err == nil && !strings.ContainsAny(digits, "+-")
	}
	switch {
	case len(s) >= 3 && s[0] == '%':
		if r, ok := hex(s[1:3]); ok {
			return r, 3
		}
	case len(s) >= 4 && s[0] == '\\' && s[1] == 'x':
		if r, ok := hex(s[2:4]); ok {
			return r, 4
		}
	case len(s) >= 6 && s[0] == '\\' && s[1] == 'u':
		if r, ok := hex(s[2:6]); ok {
			return r, 6
		}
	case strings.HasPrefix(s, "&#"):
		end := strings.IndexByte(s, ';')
		if end < 3 || end > 10 {
			return 0, 0
		}
		digits := s[2:end]
		var v uint64
		var err error
		if digits[0] == 'x' || digits[0] == 'X' {
			v, err = strconv.ParseUint(digits[1:], 16, 32)
		} else {
			v, err = strconv.ParseUint(digits, 10, 32)
		}
		if err == nil && !strings.ContainsAny(digits, "+-") {
			return rune(v), end + 1
		}
	}
	return 0, 0
}

// transportError is the Cause of a request that got no HTTP answer. Its
// text is a fixed description of the failure's kind; the underlying error,
// whose text can quote what the gateway sent, is not kept, except the
// context's own error so that errors.Is(err, context.DeadlineExceeded)
// works.
type transportError struct {
	who  Peer
	kind string
	ctx  error // context.Canceled or context.DeadlineExceeded, else nil
}

func (e *transportError) Error() string {
	return e.who.String() + " unavailable: " + e.kind
}

// Unwrap returns ErrUnavailable and, for a timeout or cancellation, the
// context error.
func (e *transportError) Unwrap() []error {
	if e.ctx != nil {
		return []error{ErrUnavailable, e.ctx}
	}
	return []error{ErrUnavailable}
}

// Timeout reports whether the request ran out of time, as net.Error does.
func (e *transportError) Timeout() bool { return errors.Is(e.ctx, context.DeadlineExceeded) }

// NoAnswer is the Cause of a request that ended without an answer or an
// error (a panic on the goroutine that sent it), naming p.
func (p Peer) NoAnswer() error {
	return &transportError{who: p, kind: "the request ended without an answer"}
}

// Unavailable turns a transport or context failure into a fail-closed
// Cause that keeps none of err's text, naming p.
func (p Peer) Unavailable(err error) error {
	var te *transportError
	if errors.As(err, &te) {
		return te
	}
	var (
		netErr    net.Error
		dnsErr    *net.DNSError
		certErr   *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		recordErr tls.RecordHeaderError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &transportError{who: p, kind: "the call's deadline passed", ctx: context.DeadlineExceeded}
	case errors.Is(err, context.Canceled):
		return &transportError{who: p, kind: "the call was cancelled", ctx: context.Canceled}
	case errors.As(err, &dnsErr):
		return &transportError{who: p, kind: "the " + p.Server() + "'s host name did not resolve"}
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid):
		return &transportError{who: p, kind: "the " + p.Server() + "'s TLS certificate was not accepted"}
	case errors.As(err, &recordErr):
		return &transportError{who: p, kind: "the " + p.Server() + " did not speak TLS"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &transportError{who: p, kind: "the connection was refused"}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return &transportError{who: p, kind: "the connection was reset"}
	case errors.As(err, &netErr) && netErr.Timeout():
		return &transportError{who: p, kind: "the request timed out", ctx: context.DeadlineExceeded}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &transportError{who: p, kind: "the connection closed before the answer was complete"}
	case strings.Contains(err.Error(), "malformed HTTP"):
		return &transportError{who: p, kind: "the " + p.Server() + "'s answer was not valid HTTP"}
	case errors.Is(err, http.ErrSchemeMismatch):
		return &transportError{who: p, kind: "the " + p.Server() + " answered HTTP to an HTTPS request"}
	}
	return &transportError{who: p, kind: "the request failed"}
}
