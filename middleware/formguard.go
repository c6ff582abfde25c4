package middleware

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// ErrFormMethodOverride is what reading a POST body fails with where a
// stack behind the middleware could take a method from it that the
// middleware, which does not read such a body before the decision, could
// not check:
//
//   - a body net/http, Rack or PHP parses as urlencoded (a multipart
//     Content-Type without a boundary too, which Rack reads so) holding a
//     key that net/http, PHP, Rack or Express reads as _method (in any
//     case, escaped or not, in a pair cut by ';' too, ".method" or
//     "[_method]" say: see the comment at the top of override.go), when
//     WithMethodOverride does not trust _method (or net/http parses no
//     form of the body);
//   - a multipart body, trusted or not, with a part header that is not
//     strict (see formGuard: every stack must read it alike) or that names
//     a part any of them reads as _method, or whose Content-Type names its
//     boundary in a way not every stack reads alike;
//   - a JSON body (a Content-Type holding "/json" or "+json", which
//     Laravel reads _method from), trusted or not, with a string, key or
//     value, read as _method.
//
// r.FormValue ignores the error (r.ParseForm then parses no field of the
// body), so a stack such as gorilla/handlers takes no method from that
// body and performs the method that was checked; r.ParseForm,
// r.ParseMultipartForm, io.ReadAll(r.Body) and the parts of
// r.MultipartReader return it (wrapped, saying what to fix: use
// errors.Is), and a handler should answer 400. Every read after the
// failing one fails alike.
var ErrFormMethodOverride = errors.New("middleware: the form body names _method, which this service cannot check; send the method itself")

// The ways a multipart body fails its reads besides naming _method, each
// saying what to fix.
var (
	errPartHeader = fmt.Errorf("%w (a multipart part's header must be lines of name:value, each ending in CRLF, "+
		"without control characters or continuation lines, with one Content-Disposition that names the part once "+
		"(name=, as a token or a quoted string; other values tokens without \"'\", quoted strings without backslashes or a ';' followed by name, "+
		"or RFC 5987 extended values such as filename*=utf-8''report.txt; no name*=) and no Content-ID)", ErrFormMethodOverride)
	errBoundary = fmt.Errorf("%w (a multipart Content-Type must name its boundary once, as boundary=<token> or "+
		"boundary=\"<letters, digits and ()+_-./:=?>\", with no second boundary= in any case, not even in the quotes)", ErrFormMethodOverride)
)

// maxFieldBytes bounds the Content-Disposition field that a formGuard
// reads; a longer one fails the read as one naming _method would.
const maxFieldBytes = 64 << 10

// maxBoundaryBytes bounds a multipart boundary (RFC 2046: 70 bytes).
const maxBoundaryBytes = 70

// States of a formGuard, at the byte it reads next.
const (
	inContent    = iota // in a part's content (or the preamble): looking for the delimiter
	inDelimiter         // after the delimiter, up to the end of its line
	atLineStart         // at the start of a header line
	atBlankLine         // after a '\r' at the start of a header line
	inFieldName         // in a header field's name
	inFieldValue        // in a header field's value
	atLineEnd           // after a '\r' in a header field's value
)

// formGuard is a multipart POST body that the middleware lets stream to
// the handler unread. The handler reads the bytes that were sent, except
// that the read that would deliver the byte that ends a part's header
// field, when that header is not strict or names the part _method, fails
// with ErrFormMethodOverride (wrapped), as does every read after it; the
// byte is the CR that ends the field's line (or the header). A
// multipart parser cannot read a part's header without that byte, so none
// gets a part named _method from the body, nor one whose name another
// stack reads otherwise.
//
// The rule is strictness, not a list of the spellings stacks misread: a
// part header is read only where every stack the middleware names reads it
// alike. It is strict when it is lines of a field name (an RFC 9110 token),
// ':' and a value of visible bytes, blanks and bytes above 0x7F (no
// control but HTAB: no \v, \f, bare CR or NUL), each line ending in CRLF
// (which RFC 2046 asks for; Rack ends a header only at CRLF CRLF, so a
// header of LF lines would end elsewhere for it), with no continuation
// line and no line without a colon (which PHP adds to the field before);
// it has exactly one Content-Disposition, which mime.ParseMediaType parses
// and which is a media type and parameters whose values are tokens or
// quoted strings without backslashes or a ';' followed by "name" in any
// case (Rack 2 finds "; name=" in them), with no "'" outside quotes (PHP takes single quotes as quotes)
// except in the RFC 5987 extended value of a parameter whose name ends in
// '*' (filename*=utf-8'en'report.txt; .NET sends one beside filename=),
// read as a whole (extValue),
// separated by ';' (Rack 3 reads a parameter right after a quoted value),
// holding exactly one parameter name and none named name*; it has no
// Content-ID (Rack names a part by its Content-ID), and no
// "Content-Disposition:" or "Content-ID:" anywhere else, in a field's
// name or value, in any case (Rack 2 looks for them anywhere). Then the name is checked (keyMatch: in any case,
// ".method" for PHP, "[_method]" for Express...). A header of no line at
// all is strict only after a close delimiter ("--boundary--").
//
// The guard does not tell a delimiter line from content as a parser does:
// every "--boundary" in the body, at a line's start or not, starts a part
// header on the next line. A body whose Content-Type does not name one
// boundary that every stack reads alike (multipartBoundary) has no read
// that succeeds.
type formGuard struct {
	body    io.ReadCloser
	delim   string // "--" and the boundary; "" when there is none to trust
	fail    [maxBoundaryBytes + 2]uint8
	matched int // inContent: the bytes of delim matched
	state   int
	closing int // inDelimiter: the bytes after delim read, up to 2; 2 when they were "--"
	lines   int // the header lines read in the current part header
	cds     int // the Content-Disposition fields in it
	name    [len("content-disposition")]byte
	nname   int    // the bytes of the field name read (name holds the first of them, lower-case)
	isCD    bool   // the field is Content-Disposition
	seenCD  int    // the bytes of "content-disposition:" matched, anywhere in the header
	seenID  int    // the bytes of "content-id:" matched, anywhere in the header
	field   []byte // the Content-Disposition's value, as sent
	err     error
}

// newFormGuard guards body, a multipart body with boundary boundary ("":
// none every stack reads alike, so that every read fails).
func newFormGuard(body io.ReadCloser, boundary string) *formGuard {
	g := &formGuard{body: body}
	if boundary == "" {
		g.err = errBoundary
		return g
	}
	g.delim = "--" + boundary
	// The failure function of the delimiter (Knuth-Morris-Pratt), so that
	// it is found across reads without holding any byte.
	for i, k := 1, 0; i < len(g.delim); i++ {
		for k > 0 && g.delim[i] != g.delim[k] {
			k = int(g.fail[k-1])
		}
		if g.delim[i] == g.delim[k] {
			k++
		}
		g.fail[i] = uint8(k)
	}
	return g
}

// Read implements io.Reader.
func (g *formGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.body.Read(p)
	if e := g.scan(p[:n]); e != nil {
		g.err = e
		return 0, e
	}
	if err == io.EOF {
		if e := g.atEOF(); e != nil {
			g.err = e
			return 0, e
		}
	}
	return n, err
}

// Close closes the body.
func (g *formGuard) Close() error { return g.body.Close() }

// atEOF returns why a body that ends here fails: one that ends inside a
// part header is judged as if the header ended there (it has no CRLF to
// end its last line, so a line begun is not strict).
func (g *formGuard) atEOF() error {
	switch g.state {
	case atLineStart:
		if g.lines == 0 {
			return nil // the body ends after a delimiter line
		}
		return g.endHeader()
	case inContent, inDelimiter:
		return nil
	}
	return errPartHeader
}

// scan reads p on from the guard's state and returns why the read fails,
// or nil.
func (g *formGuard) scan(p []byte) error {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch g.state {
		case inContent:
			for ; i < len(p); i++ {
				c = p[i]
				for g.matched > 0 && c != g.delim[g.matched] {
					g.matched = int(g.fail[g.matched-1])
				}
				if c == g.delim[g.matched] {
					g.matched++
				}
				if g.matched == len(g.delim) {
					g.matched, g.state, g.closing = 0, inDelimiter, 0
					break
				}
			}
		case inDelimiter:
			switch {
			case c == '\n':
				g.state, g.lines, g.cds = atLineStart, 0, 0
			case g.closing < 2 && c == '-':
				g.closing++
			case g.closing < 2:
				g.closing = 3 // not a close delimiter
			}
		case atLineStart:
			switch {
			case c == '\r':
				// The end of the header, judged at its CR: a parser
				// that takes a line cut by an error as a line (as
				// net/textproto does) then reads no line more.
				if err := g.endHeader(); err != nil {
					return err
				}
				g.state = atBlankLine
			case isTokenByte(c):
				g.state, g.nname, g.isCD = inFieldName, 0, false
				g.seenCD, g.seenID = 0, 0
				g.addNameByte(c)
				g.watch(c)
			default:
				return errPartHeader // a continuation line, a bare LF, a line with no field name
			}
		case atBlankLine:
			if c != '\n' {
				return errPartHeader
			}
			g.state = inContent
		case inFieldName:
			switch {
			case c == ':':
				if w := g.watch(c); w == 2 || w == 1 && !g.isCDName() {
					// "X-Content-Disposition:" or "X-Content-ID:",
					// which Rack 2 reads as the field.
					return errPartHeader
				}
				if err := g.startValue(); err != nil {
					return err
				}
				g.state = inFieldValue
			case isTokenByte(c):
				g.addNameByte(c)
				g.watch(c)
			default:
				return errPartHeader // blanks before the colon, a line with no colon
			}
		case inFieldValue:
			end := i
			for end < len(p) && isFieldValueByte(p[end]) {
				if g.watch(p[end]) != 0 {
					return errPartHeader // "Content-Disposition:" in a value, which Rack 2 reads as the field
				}
				end++
			}
			if g.isCD {
				if len(g.field)+end-i > maxFieldBytes {
					return errPartHeader
				}
				g.field = append(g.field, p[i:end]...)
			}
			i = end
			switch {
			case i == len(p):
			case p[i] == '\r':
				// The field ends here: judged at its CR (see above).
				if err := g.endField(); err != nil {
					return err
				}
				g.state = atLineEnd
			default:
				return errPartHeader // a control byte, or a bare LF
			}
		case atLineEnd:
			if c != '\n' {
				return errPartHeader
			}
			g.state = atLineStart
		}
	}
	return nil
}

// addNameByte reads the next byte of a field name.
func (g *formGuard) addNameByte(c byte) {
	if g.nname < len(g.name) {
		g.name[g.nname] = ascii.LowerByte(c)
	}
	g.nname++
}

// watch reads the next byte of a part header's line (its name, colon and
// value) for the strings Rack 2 looks for anywhere in a part header, in
// any case, and returns which c completes: 1 for "content-disposition:",
// 2 for "content-id:", else 0. Neither string has its first byte again, so
// a mismatch starts the match over at c.
func (g *formGuard) watch(c byte) int {
	const cd, id = "content-disposition:", "content-id:"
	c = ascii.LowerByte(c)
	step := func(n int, pat string) int {
		switch {
		case c == pat[n]:
			return n + 1
		case c == pat[0]:
			return 1
		}
		return 0
	}
	g.seenCD, g.seenID = step(g.seenCD, cd), step(g.seenID, id)
	switch {
	case g.seenID == len(id):
		g.seenID = 0
		return 2
	case g.seenCD == len(cd):
		g.seenCD = 0
		return 1
	}
	return 0
}

// isCDName reports whether the field name read is Content-Disposition.
func (g *formGuard) isCDName() bool {
	return g.nname == len("content-disposition") && string(g.name[:]) == "content-disposition"
}

// startValue reads the colon after a field name: a second
// Content-Disposition, or a Content-ID, fails the read.
func (g *formGuard) startValue() error {
	name := g.name[:min(g.nname, len(g.name))]
	switch {
	case g.nname == len("content-id") && string(name) == "content-id":
		return errPartHeader
	case g.nname == len("content-disposition") && string(name) == "content-disposition":
		if g.cds++; g.cds > 1 {
			return errPartHeader
		}
		g.isCD, g.field = true, g.field[:0]
	}
	return nil
}

// endField reads the CR that ends a field's line: a Content-Disposition
// that is not strict, or that names the part _method, fails the read.
func (g *formGuard) endField() error {
	g.lines++
	if !g.isCD {
		return nil
	}
	name, ok := strictDispositionName(g.field)
	switch {
	case !ok:
		return errPartHeader
	case readAsKey(name, formKey):
		return ErrFormMethodOverride
	}
	return nil
}

// endHeader reads the end of a part header: one without a
// Content-Disposition fails the read, unless it is empty and after a
// close delimiter.
func (g *formGuard) endHeader() error {
	if g.cds == 1 || g.lines == 0 && g.closing == 2 {
		return nil
	}
	return errPartHeader
}

// isTokenByte reports whether c may be in an RFC 9110 token.
func isTokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isFieldValueByte reports whether c may be in a strict header field
// value: a visible byte, a blank, or a byte above 0x7F.
func isFieldValueByte(c byte) bool { return c == '\t' || c >= ' ' && c != 0x7f }

// strictDispositionName returns the name a strict Content-Disposition
// value names its part, and whether the value is strict (see formGuard):
// mime.ParseMediaType parses it, it is a type and parameters separated by
// ';' (blanks around it), each a name, '=' and a token without "'", a
// quoted string without '\' and without a ';' followed (after blanks) by
// "name" in any case (semicolonName), or, for a name ending in '*', an
// extended value (extValue); exactly one parameter is named name, in any
// case, and none name* (name*0 too). The strictness is for what names the
// part: any other parameter (filename, filename*) is read as a whole value
// that every stack ends where mime.ParseMediaType does.
func strictDispositionName(v []byte) (string, bool) {
	s := strings.Trim(string(v), " \t")
	_, params, err := mime.ParseMediaType(s)
	if err != nil {
		return "", false
	}
	strictToken := func(s string) int {
		n := 0
		for n < len(s) && isTokenByte(s[n]) && s[n] != '\'' {
			n++
		}
		return n
	}
	skipBlanks := func(s string) string { return strings.TrimLeft(s, " \t") }
	n := strictToken(s)
	if n == 0 {
		return "", false
	}
	s = s[n:]
	var name string
	names := 0
	for s = skipBlanks(s); s != ""; s = skipBlanks(s) {
		if s[0] != ';' {
			return "", false
		}
		s = skipBlanks(s[1:])
		n = strictToken(s)
		if n == 0 || n == len(s) || s[n] != '=' {
			return "", false
		}
		param := s[:n]
		s = s[n+1:]
		var value string
		if s != "" && s[0] == '"' {
			end := strings.IndexAny(s[1:], "\"\\")
			if end < 0 || s[1+end] != '"' {
				return "", false // a backslash
			}
			value, s = s[1:1+end], s[2+end:]
			if semicolonName(value) {
				return "", false // Rack 2 reads "; name=" in quotes
			}
		} else if param[len(param)-1] == '*' {
			// RFC 2231/5987 (filename*=utf-8''report.txt, as .NET
			// sends it beside filename=): read as a whole.
			if n = extValue(s); n < 0 {
				return "", false
			}
			value, s = s[:n], s[n:]
		} else {
			n = strictToken(s)
			if n == 0 {
				return "", false
			}
			value, s = s[:n], s[n:]
		}
		switch {
		case ascii.EqualFold(param, "name"):
			name = value
			names++
		case len(param) > len("name") && ascii.EqualFold(param[:len("name")+1], "name*"):
			return "", false
		}
	}
	if names != 1 || params["name"] != name {
		return "", false
	}
	return name, true
}

// extValue returns the length of the RFC 5987 ext-value (RFC 2231's
// extended value) that s starts with, or -1: a charset of letters, digits
// and !#$&+-^_`|~, "'", a language of letters, digits and '-' (maybe
// none), "'", then attr-chars (letters, digits and !#$&+-.^_`|~) and
// %XX escapes. It holds exactly two "'", which PHP takes for the quotes
// of an empty or a language value, and no ';', '"', '\' or blank, so that
// every stack ends the parameter where mime.ParseMediaType does.
func extValue(s string) int {
	attrChar := func(c byte) bool { return isTokenByte(c) && c != '*' && c != '\'' && c != '%' }
	i := 0
	for i < len(s) && attrChar(s[i]) && s[i] != '.' {
		i++
	}
	if i == 0 || i == len(s) || s[i] != '\'' {
		return -1
	}
	for i++; i < len(s) && (isAlnum(s[i]) || s[i] == '-'); i++ {
	}
	if i == len(s) || s[i] != '\'' {
		return -1
	}
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case attrChar(c):
		case c == '%' && i+2 < len(s) && ascii.IsHex(s[i+1]) && ascii.IsHex(s[i+2]):
			i += 2
		case c == '%':
			return -1
		default:
			return i
		}
	}
	return i
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// semicolonName reports whether a quoted value holds a ';' followed,
// after blanks, by "name" in any case: Rack 2 names a part by the
// unanchored Content-Disposition:[^:]*;\s*name=, quotes or not. Any other
// ';' ("report;v2.pdf", which browsers and Go's Writer send verbatim) is
// read alike by every stack.
func semicolonName(v string) bool {
	for i := strings.IndexByte(v, ';'); i >= 0; i = strings.IndexByte(v, ';') {
		v = strings.TrimLeft(v[i+1:], " \t")
		if len(v) >= len("name") && ascii.EqualFold(v[:len("name")], "name") {
			return true
		}
	}
	return false
}

// multipartBoundary returns the boundary that every stack the middleware
// names reads from a multipart POST body's Content-Type values, or ""
// when there is none they read alike, and whether any of them names a
// boundary at all (if not, no stack parses the body as multipart, and Rack
// parses it as urlencoded). A boundary is read alike when there is one
// Content-Type value, with a boundary parameter mime.ParseMediaType
// parses, spelt "boundary=" in lower case where "boundary" first appears
// in any case (PHP takes the first one, anywhere), followed by the
// boundary, then the end or ';', or by the boundary in double quotes, and
// "boundary" in no case after it; and "boundary=" in no case after the
// first one, not even inside the boundary: Rack's greedy regex
// (%r|\Amultipart/.*boundary=\"?([^\";,]+)\"?|ni) takes the LAST
// "boundary=" anywhere, quotes or not. The boundary itself may hold
// "boundary" without '=' ("----WebKitFormBoundary..."). It is 1 to 70
// letters, digits and ()+_-./:=? (RFC 2046 without the blank, ',' and
// "'", at which Rack or PHP end it).
func multipartBoundary(contentType []string) (boundary string, named bool) {
	for _, v := range contentType {
		if indexFoldASCII(v, "boundary") >= 0 {
			named = true
		}
	}
	if !named || len(contentType) != 1 {
		return "", named
	}
	v := contentType[0]
	at := indexFoldASCII(v, "boundary")
	if v[at:at+len("boundary")] != "boundary" {
		return "", true // PHP looks for it in lower case first
	}
	_, params, err := mime.ParseMediaType(v)
	b := params["boundary"]
	if err != nil || b == "" || len(b) > maxBoundaryBytes {
		return "", true
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("()+_-./:=?", c) >= 0) {
			return "", true
		}
	}
	rest, ok := strings.CutPrefix(v[at+len("boundary"):], "=")
	switch {
	case !ok, indexFoldASCII(rest, "boundary=") >= 0:
		// Rack takes the last "boundary=", PHP and net/http the first.
		return "", true
	case strings.HasPrefix(rest, `"`+b+`"`):
		rest = rest[len(b)+2:]
	case strings.HasPrefix(rest, b) && (len(rest) == len(b) || rest[len(b)] == ';'):
		rest = rest[len(b):]
	default:
		return "", true
	}
	if indexFoldASCII(rest, "boundary") >= 0 {
		return "", true
	}
	return b, true
}

// indexFoldASCII is the index of the first sub in s, in any ASCII case,
// or -1.
func indexFoldASCII(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if ascii.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// jsonContentType reports whether Laravel reads a body of these
// Content-Type values as JSON (Request::isJson: the value holds "/json"
// or "+json"), in any ASCII case and in any value.
func jsonContentType(contentType []string) bool {
	for _, v := range contentType {
		if indexFoldASCII(v, "/json") >= 0 || indexFoldASCII(v, "+json") >= 0 {
			return true
		}
	}
	return false
}
