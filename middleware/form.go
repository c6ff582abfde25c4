package middleware

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/internal/ascii"
	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// maxTrustedFormBytes bounds the urlencoded POST body the middleware reads
// before the decision, which it does only when WithMethodOverride trusts
// the form key _method (the method the body names is then part of the
// question), and only once the cheap refusals are made (no token, or one
// that is not a token): 64 KiB, documented in WithMethodOverride. A larger
// body is refused with 413 before any check. Without that trust no body
// byte is read before the decision (keyGuard).
const maxTrustedFormBytes = 64 << 10

// Kinds of request body, as a stack tells them by Content-Type: bits of
// a set (formKinds), noForm the empty one.
const (
	noForm         = 0
	urlencodedForm = 1 << iota
	multipartForm
)

// formOverride finds the form key _method wherever a stack behind the
// middleware may read it (see the comment at the top of override.go). When
// _method is trusted, it returns the values r.FormValue reads; otherwise
// nil, once it found none. It returns why the request is refused instead.
// It does not change r: the body the handler and the callbacks must read
// instead of r.Body (guarded, or given back after the middleware read it),
// if any, is body; w is the response an http.MaxBytesReader of it reports
// to.
func (c *config) formOverride(w http.ResponseWriter, r *http.Request) (values []string, body io.ReadCloser, ref *refusal) {
	queryExact, lookalike := 0, 0
	if mayHoldFormKey(r.URL.RawQuery) {
		queryExact, lookalike = formKeys(r.URL.RawQuery)
	}
	parsed := false
	if r.Form != nil || r.PostForm != nil || r.MultipartForm != nil { // a form an outer handler parsed
		parsed = len(r.Form[formKey]) > 0 || len(r.PostForm[formKey]) > 0 ||
			r.MultipartForm != nil && len(r.MultipartForm.Value[formKey]) > 0
		lookalike += parsedLookalikes(r.Form) + parsedLookalikes(r.PostForm)
		if r.MultipartForm != nil {
			lookalike += parsedLookalikes(r.MultipartForm.Value)
		}
	}
	if ref := c.formRefusal(queryExact, lookalike, parsed); ref != nil {
		return nil, nil, ref
	}
	if queryExact > 0 {
		// Trusted, but r.FormValue reads it and r.PostFormValue (gin's
		// c.PostForm) does not: the stack could perform the POST where
		// the middleware checked the method the query names.
		return nil, nil, badRequest("the request carries the form key " + formKey + " in its query; send it in the form body, where every reader of the form finds it")
	}

	var read []byte
	bodyExact := 0
	if isPost(r.Method) && r.Body != nil && r.Body != http.NoBody {
		if body, read, bodyExact, ref = c.guardBody(w, r); ref != nil {
			return nil, nil, ref
		}
	}

	switch {
	case !c.trustForm:
		return nil, body, nil
	case r.Form != nil && bodyExact > 0:
		// A form set by hand, and a body r.ParseForm would read into
		// r.PostForm only: which one names the method?
		return nil, nil, badRequest("the request carries the form key " + formKey + " in a body its parsed form does not hold; send the method once")
	case r.Form != nil:
		return r.Form[formKey], body, nil
	case r.PostForm != nil:
		return r.PostForm[formKey], body, nil
	case bodyExact > 0:
		// What r.ParseForm would make of the body, without parsing it
		// into r (the query holds no _method).
		f, _ := url.ParseQuery(string(read))
		return f[formKey], body, nil
	}
	return nil, body, nil
}

// guardBody returns the body the handler and the callbacks must read
// instead of r.Body, a POST body, or nil when r.Body is theirs as it is:
// guarded (keyGuard, formGuard, jsonGuard) wherever a stack behind the
// middleware may take a method from it, or given back after the middleware
// read it (read) when _method is trusted and r.FormValue reads the body
// (bodyExact counts its keys _method). It returns why the request is
// refused instead.
func (c *config) guardBody(w http.ResponseWriter, r *http.Request) (body io.ReadCloser, read []byte, bodyExact int, ref *refusal) {
	cts := r.Header["Content-Type"]
	kinds, plain := formKinds(cts)
	goKind := netHTTPFormKind(cts)
	json := jsonContentType(cts)
	boundary := ""
	if kinds&multipartForm != 0 {
		var named bool
		if boundary, named = multipartBoundary(cts); !named {
			// No stack parses the body as multipart; Rack parses it
			// as urlencoded.
			kinds = kinds&^multipartForm | urlencodedForm
			plain = false
		}
	}
	// Laravel reads a JSON Content-Type's body as JSON, not as a form.
	plain = plain && !json
	switch {
	case kinds == noForm && !json:
		return nil, nil, 0, nil // no form, no JSON
	case json && (contentEncoded(r.Header) || !utf8Charset(cts)):
		// The guard reads the bytes sent, as UTF-8; Express's
		// body-parser inflates and decodes them first.
		return nil, nil, 0, &refusal{
			status:  http.StatusUnsupportedMediaType,
			message: "a JSON body must be UTF-8 (charset absent or utf-8) sent without Content-Encoding, so that the method it may name is the one checked",
			header:  [2]string{"Accept-Encoding", "identity"},
		}
	case goKind == urlencodedForm && r.PostForm != nil,
		goKind == multipartForm && r.MultipartForm != nil:
		// No form, or one net/http parsed already: its values are in
		// the maps, and the body is read.
		return nil, nil, 0, nil
	case kinds != noForm && contentEncoded(r.Header):
		return nil, nil, 0, &refusal{
			status:  http.StatusUnsupportedMediaType,
			message: "a form body must be sent without Content-Encoding, so that the method it may name is the one checked",
			header:  [2]string{"Accept-Encoding", "identity"},
		}
	}
	body = r.Body
	switch {
	case kinds&urlencodedForm != 0 && c.trustForm && goKind == urlencodedForm:
		// Trusted, and r.FormValue reads the body: read it here.
		if read, body, ref = bufferBody(w, r); ref != nil {
			return nil, nil, 0, ref
		}
		var bodyLookalike int
		if mayHoldFormKey(read) {
			bodyExact, bodyLookalike = formKeys(read)
		}
		if ref := c.formRefusal(bodyExact, bodyLookalike, false); ref != nil {
			return nil, nil, 0, ref
		}
		if bodyExact > 0 && !plain {
			// net/http reads the method, a stack that reads no form
			// of this body would perform the POST.
			return nil, nil, 0, badRequest("the request names the method in its form key " + formKey +
				" under a Content-Type that not every stack reads as a form; send Content-Type: application/x-www-form-urlencoded as it is spelt")
		}
		body = guardKinds(body, kinds&^urlencodedForm, boundary, json)
	case kinds&urlencodedForm != 0:
		// Not read before the decision: a key read as _method fails
		// the handler's read. Trusted too when net/http reads no form
		// of this body (it performs the POST) and another stack does.
		body = newKeyGuard(guardKinds(body, kinds&^urlencodedForm, boundary, json))
		if reflect.TypeOf(r.Body) == maxBytesReaderType {
			// r.ParseForm reads a body up to 10 MB unless it is an
			// http.MaxBytesReader, whose limit it honours instead: the
			// guard must not hide the limit an outer handler set, which
			// r.Body (under the guard) still enforces.
			body = http.MaxBytesReader(w, body, math.MaxInt64)
		}
	default:
		// Not read: a part header not strict or read as _method, or a
		// JSON string read as _method, fails the handler's read.
		body = guardKinds(body, kinds, boundary, json)
	}
	return body, read, bodyExact, nil
}

// guardKinds wraps body in the guards of a multipart body with boundary
// (when kinds has multipartForm) and of a JSON one (when json).
func guardKinds(body io.ReadCloser, kinds int, boundary string, json bool) io.ReadCloser {
	if kinds&multipartForm != 0 {
		body = newFormGuard(body, boundary)
	}
	if json {
		g := &jsonGuard{body: body}
		g.key.reset(formKey)
		body = g
	}
	return body
}

// maxBytesReaderType is the type of the bodies http.MaxBytesReader makes,
// which r.ParseForm tells by type.
var maxBytesReaderType = reflect.TypeOf(http.MaxBytesReader(nil, http.NoBody, 0))

// parsedLookalikes counts the keys of a form an outer handler parsed that
// a stack reads as _method (keyMatch) but that are not _method itself.
func parsedLookalikes(form map[string][]string) int {
	n := 0
	for k := range form {
		if k != formKey && readAsKey(k, formKey) {
			n++
		}
	}
	return n
}

// formRefusal returns why a request whose form has exact and lookalike
// _method keys (formKeys), or _method in a form parsed already, is
// refused, or nil: any of them without trust, a lookalike with it.
func (c *config) formRefusal(exact, lookalike int, parsed bool) *refusal {
	switch {
	case !c.trustForm && (exact > 0 || lookalike > 0 || parsed):
		return badRequest("the request carries the form key " + formKey + ", which this service does not honour; send the method itself")
	case lookalike > 0:
		return badRequest("the request carries a form key the handler may read otherwise than " + formKey +
			" (another case or a spelling PHP, Rack or Express reads as " + formKey + ", a ';' separator, a bad escape); send " + formKey + " as it is")
	}
	return nil
}

// netHTTPFormKind tells the form r.ParseForm or r.ParseMultipartForm
// would read from a body of these Content-Type values, with the function
// net/http decides it with, so that the two cannot disagree:
// mime.ParseMediaType of the first value lower-cases the media type with
// strings.ToLower (in which "İ" is "i"), and r.ParseForm reads a
// urlencoded body where the media type it returns is exactly
// application/x-www-form-urlencoded, even with a parameter it could not
// parse. Multipart errs on the side of a form (the middleware never reads
// one, it guards it): any multipart type, parameters parsed or not, where
// r.MultipartReader takes multipart/form-data and multipart/mixed with
// valid parameters only.
func netHTTPFormKind(contentType []string) int {
	if len(contentType) == 0 {
		return noForm
	}
	mediaType, _, _ := mime.ParseMediaType(contentType[0])
	return mediaKind(mediaType)
}

// formKinds tells the forms any stack the middleware names would parse a
// POST body of these Content-Type values (nil: none sent) as, a set of
// urlencodedForm and multipartForm, and whether all of them parse it as
// the same urlencoded form (plain). The readings, the first two applied to
// each value (a proxy may pass any of them on, or join them with ", "):
//
//   - Rack parses a body with no Content-Type, or an empty one, as a
//     urlencoded form, and cuts the media type at ';' or ',';
//   - PHP lower-cases it and cuts it at ';', ',' or a space;
//   - net/http (netHTTPFormKind).
//
// For kinds, blanks before the media type are dropped, a tab cuts it as a
// space does, and it is compared in any ASCII case; plain takes each
// reading exactly. It reads no body.
func formKinds(contentType []string) (kinds int, plain bool) {
	kinds = netHTTPFormKind(contentType)
	plain = len(contentType) == 1 && kinds == urlencodedForm
	if len(contentType) == 0 {
		return urlencodedForm, false // Rack
	}
	const urlencoded = "application/x-www-form-urlencoded"
	for _, v := range contentType {
		// As sent, for plain: each reading exactly.
		rack, _, _ := strings.Cut(v, ";")
		rack, _, _ = strings.Cut(rack, ",")
		php := v
		if i := strings.IndexAny(v, ";, "); i >= 0 {
			php = v[:i]
		}
		plain = plain && ascii.EqualFold(strings.TrimRight(rack, " \t"), urlencoded) && ascii.EqualFold(php, urlencoded)
		// Blanks before it dropped, cut at a tab too, for kinds: a
		// superset of the readings.
		v = strings.TrimLeft(v, " \t")
		if i := strings.IndexAny(v, ";,"); i >= 0 {
			kinds |= cutMediaKind(strings.TrimRight(v[:i], " \t"))
		}
		if i := strings.IndexAny(v, ";, \t"); i >= 0 {
			v = v[:i]
		}
		kinds |= cutMediaKind(v)
	}
	return kinds, plain
}

// cutMediaKind is the form a media type cut from a Content-Type names, in
// any ASCII case; an empty one is urlencoded, as Rack reads a missing
// Content-Type.
func cutMediaKind(mt string) int {
	const multipart = "multipart/"
	switch {
	case mt == "", ascii.EqualFold(mt, "application/x-www-form-urlencoded"):
		return urlencodedForm
	case len(mt) >= len(multipart) && ascii.EqualFold(mt[:len(multipart)], multipart):
		return multipartForm
	}
	return noForm
}

// mediaKind is the form a lower-case media type names.
func mediaKind(mediaType string) int {
	switch {
	case mediaType == "application/x-www-form-urlencoded":
		return urlencodedForm
	case strings.HasPrefix(mediaType, "multipart/"):
		return multipartForm
	}
	return noForm
}

// utf8Charset reports whether every charset parameter of these
// Content-Type values is utf-8, in any ASCII case, or there is none: each
// "charset" in any case, anywhere, followed by '=' (blanks around it), a
// value (quoted or not) ending at '"', ';', ',' or a blank. A superset of
// what a parser takes for a charset, so a value it cannot parse is not
// read otherwise.
func utf8Charset(contentType []string) bool {
	const charset = "charset"
	for _, v := range contentType {
		for i := indexFoldASCII(v, charset); i >= 0; {
			v = strings.TrimLeft(v[i+len(charset):], " \t")
			i = indexFoldASCII(v, charset)
			rest, ok := strings.CutPrefix(v, "=")
			if !ok {
				continue
			}
			rest = strings.TrimLeft(rest, " \t\"")
			n := strings.IndexAny(rest, "\";, \t")
			if n < 0 {
				n = len(rest)
			}
			if !ascii.EqualFold(rest[:n], "utf-8") {
				return false
			}
		}
	}
	return true
}

// contentEncoded reports whether the body has a Content-Encoding other
// than identity: what net/http parses is then not what a handler stack
// that decodes it would read.
func contentEncoded(h http.Header) bool {
	for _, v := range h["Content-Encoding"] {
		for coding := range strings.SplitSeq(v, ",") {
			if c := strings.TrimSpace(coding); c != "" && !strings.EqualFold(c, "identity") {
				return true
			}
		}
	}
	return false
}

// bufferBody reads a urlencoded POST body, up to maxTrustedFormBytes, and
// returns it with the body that gives it back: body reads the same bytes
// and closes r.Body. A body the middleware cannot read whole is refused:
// 413 when it is too large (or larger than an http.MaxBytesReader allows),
// 400 otherwise.
//
// The read ends when the request's context is done (README rule 10): a
// caller that stalls its body past the request's deadline, or whose
// request is cancelled, gets the unavailable answer, as a decision out of
// time does, and holds the handler no longer. It sets w's read deadline
// to the moment the context ends (http.ResponseController, through any
// writer that has Unwrap, as gin's and echo's have), which only ever
// shortens the connection's (HTTP/1) or stream's (HTTP/2) deadline. Where
// w cannot set one (http.ErrNotSupported: a wrapping writer without
// Unwrap, a server that is not net/http's), the read ends with the body,
// or the server's own ReadTimeout, as before.
func bufferBody(w http.ResponseWriter, r *http.Request) (read []byte, body io.ReadCloser, ref *refusal) {
	ctx := r.Context()
	if transport.Late(ctx) != nil {
		return nil, nil, outOfTime
	}
	rc := http.NewResponseController(w)
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		// The writer's chain is user code: a panic there is recovered,
		// and the request still gets the out-of-time answer (a-last10c).
		_ = safego.Call(func() { _ = rc.SetReadDeadline(time.Now()) })
	})
	b, err := readBody(r.Body)
	if !stop() {
		// The context ended during the read: the deadline is set (or
		// being set) on the connection, and must be before the handler
		// returns. The connection is not used again: net/http's own read
		// of the next request may already have met that deadline and
		// ended the connection's context, which every later request on it
		// would start with (a-last10c: one late request made the next
		// requests on a kept-alive connection 503).
		<-fired
		if r.ProtoMajor == 1 { // HTTP/2 sets the deadline on the stream alone
			w.Header().Set("Connection", "close")
		}
		return nil, nil, outOfTime
	}
	switch {
	case tooLarge(err):
		return nil, nil, &refusal{status: http.StatusRequestEntityTooLarge, message: "the request body is larger than this service accepts"}
	case err != nil:
		return nil, nil, badRequest("the request body could not be read")
	case len(b) > maxTrustedFormBytes:
		return nil, nil, &refusal{status: http.StatusRequestEntityTooLarge, message: "a urlencoded form body must not exceed 64 KiB here: " +
			"this service takes the method from its form key " + formKey + " (WithMethodOverride), so reads it before deciding"}
	}
	rb := &replayBody{body: r.Body}
	rb.Reset(b)
	return b, rb, nil
}

// readBody reads body to its end or to one byte past maxTrustedFormBytes.
// Its buffer grows with the bytes that arrive, never with the length the
// request declares: a client that declares 10 MB and sends nothing costs
// what it sent.
func readBody(body io.Reader) ([]byte, error) {
	b := make([]byte, 0, 512)
	for len(b) <= maxTrustedFormBytes {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := body.Read(b[len(b):min(cap(b), maxTrustedFormBytes+1)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		} else if err != nil {
			return b, err
		}
	}
	return b, nil
}

// replayBody is a request body the middleware read, given back whole.
type replayBody struct {
	bytes.Reader
	body io.ReadCloser // the original, which Close closes
}

func (b *replayBody) Close() error { return b.body.Close() }

// tooLarge reports whether a body could not be read for its size.
func tooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// formKeys counts the pairs of a urlencoded form, a query or a body, whose
// key a stack behind the middleware reads as _method (keyMatch): exact
// ones, which url.ParseQuery (so r.FormValue) reads as _method itself,
// and lookalikes, which only another reader takes for it: the key in
// another case or spelt as PHP, Rack or Express's qs reads it, or in a
// pair with a ';' (which url.ParseQuery skips and older parsers split
// on), or with a value that is not validly escaped (which url.ParseQuery
// skips).
func formKeys[S string | []byte](s S) (exact, lookalike int) {
	var m keyMatch
	for len(s) > 0 {
		pair := s
		if i := indexByte(s, '&'); i >= 0 {
			pair, s = s[:i], s[i+1:]
		} else {
			s = s[len(s):]
		}
		semicolon := indexByte(pair, ';') >= 0
		for len(pair) > 0 {
			part := pair
			if i := indexByte(pair, ';'); i >= 0 {
				part, pair = pair[:i], pair[i+1:]
			} else {
				pair = pair[len(pair):]
			}
			key, value := part, part[len(part):]
			if i := indexByte(part, '='); i >= 0 {
				key, value = part[:i], part[i+1:]
			}
			m.reset(formKey)
			for i := 0; i < len(key) && !m.decided(); i++ {
				m.feedEscaped(key[i])
			}
			switch {
			case !m.matched():
			case !semicolon && unescapesTo(key, formKey) && validEscapes(value):
				exact++
			default:
				lookalike++
			}
		}
	}
	return exact, lookalike
}

// mayHoldFormKey reports whether a urlencoded form could hold a key that
// formKeys counts: such a key holds formKeyTail in some case, as it is,
// or has an escape. A query or body with neither (most of them) is not
// read pair by pair.
func mayHoldFormKey[S string | []byte](s S) bool {
	if indexByte(s, '%') >= 0 {
		return true
	}
	for i := 0; i+len(formKeyTail) <= len(s); i++ {
		j := 0
		for j < len(formKeyTail) && ascii.LowerByte(s[i+j]) == formKeyTail[j] {
			j++
		}
		if j == len(formKeyTail) {
			return true
		}
	}
	return false
}

// formKeyTail is the end of formKey after its last '_', the part that a
// key read as formKey (keyMatch) holds, unescaped, in some case.
var formKeyTail = formKey[strings.LastIndexByte(formKey, '_')+1:]

// unescapesTo reports whether url.QueryUnescape makes key of s.
func unescapesTo[S string | []byte](s S, key string) bool {
	j := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && ascii.IsHex(s[i+1]) && ascii.IsHex(s[i+2]):
			c = ascii.Unhex(s[i+1])<<4 | ascii.Unhex(s[i+2])
			i += 2
		case c == '%':
			return false
		case c == '+':
			c = ' '
		}
		if j == len(key) || c != key[j] {
			return false
		}
		j++
	}
	return j == len(key)
}

// validEscapes reports whether url.QueryUnescape takes s: every '%' starts
// an escape of two hex digits.
func validEscapes[S string | []byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 >= len(s) || !ascii.IsHex(s[i+1]) || !ascii.IsHex(s[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func indexByte[S string | []byte](s S, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
