package middleware

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"strings"
)

// ErrFormMethodOverride is what reading a POST form body fails with where
// the body names the form key _method and the middleware, which does not
// read such a body before the decision, could not check the method in it:
// a body net/http, Rack or PHP parses as urlencoded holding a key that
// net/http, PHP, Rack or Express reads as _method (in any case, escaped or
// not, in a pair cut by ';' too, ".method" or "[_method]" say: see the
// comment at the top of override.go) when WithMethodOverride does not
// trust _method (or net/http parses no form of the body), and a multipart
// body naming a part any of them reads as _method, trusted or not.
// r.FormValue ignores the error (r.ParseForm then parses no field of the
// body), so a stack such as gorilla/handlers takes no method from that
// body and performs the method that was checked; r.ParseForm,
// r.ParseMultipartForm, io.ReadAll(r.Body) and the parts of
// r.MultipartReader return it (wrapped: use errors.Is), and a handler
// should answer 400. Every read after the failing one fails alike.
var ErrFormMethodOverride = errors.New("middleware: the form body names _method, which this service cannot check; send the method itself")

// maxFieldBytes bounds the Content-Disposition field, continuation lines
// included, that a formGuard reads; a longer one fails the read as one
// naming _method would.
const maxFieldBytes = 64 << 10

// States of a formGuard, at the byte it reads next.
const (
	inName      = iota // at the start of a line, g.n bytes of "content-disposition" matched
	inLine             // in a line that is not a Content-Disposition field
	beforeColon        // the field name matched: blanks, then ':'
	inValue            // in the field's value, up to the end of its line
	afterValue         // at the start of the line after a field's line
)

// formGuard is a multipart POST body that the middleware lets stream to
// the handler unread. The handler reads the bytes that were sent, except
// that the read that would deliver the first byte after a
// Content-Disposition field naming a part _method fails with
// ErrFormMethodOverride, as does every read after it. A multipart parser
// cannot end a part's header without that byte, so none gets a part named
// _method from the body.
//
// The guard does not track the boundary: it looks at every line of the
// body, so it also fails on such a field where a parser would not see a
// part header (in a file's content, say). A field is one that net/textproto
// would read, in a superset: a line starting with "Content-Disposition" in
// any ASCII case, blanks, ':', the value, and its continuation lines
// (starting with a blank), unfolded as net/textproto unfolds them. The
// value is parsed with mime.ParseMediaType, as mime/multipart does, and
// names _method when a stack reads its name parameter as _method
// (keyMatch: in any case, ".method" for PHP, "[_method]" for Express...),
// or any name parameter a more lenient parser could find is so read
// (anyNameReadAsKey: beside a name*= that mime.ParseMediaType prefers, or
// in a value it refuses).
type formGuard struct {
	body  io.ReadCloser
	state int
	n     int    // in inName, the bytes of the field name matched
	field []byte // the field's value as sent, each line ending in '\n'
	value []byte // the field's value unfolded, reused
	err   error
}

// Read implements io.Reader.
func (g *formGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.body.Read(p)
	if g.scan(p[:n]) || err == io.EOF && (g.state == inValue || g.state == afterValue) && g.namesFormKey() {
		g.err = ErrFormMethodOverride
		return 0, g.err
	}
	return n, err
}

// Close closes the body.
func (g *formGuard) Close() error { return g.body.Close() }

// scan reads p on from the guard's state and reports whether p completes
// a Content-Disposition field that names _method (or one too long to
// tell).
func (g *formGuard) scan(p []byte) bool {
	const name = "content-disposition"
	for i := 0; i < len(p); {
		switch g.state {
		case inLine:
			j := bytes.IndexByte(p[i:], '\n')
			if j < 0 {
				return false
			}
			i += j + 1
			g.state, g.n = inName, 0
		case inName:
			switch {
			case g.n == len(name):
				g.state = beforeColon
			case lower(p[i]) == name[g.n]:
				g.n++
				i++
			default:
				g.state = inLine
			}
		case beforeColon:
			switch p[i] {
			case ' ', '\t':
				i++
			case ':':
				i++
				g.state, g.field = inValue, g.field[:0]
			default:
				g.state = inLine
			}
		case inValue:
			end, eol := len(p), false
			if j := bytes.IndexByte(p[i:], '\n'); j >= 0 {
				end, eol = i+j+1, true
			}
			if len(g.field)+end-i > maxFieldBytes {
				return true
			}
			g.field = append(g.field, p[i:end]...)
			i = end
			if eol {
				g.state = afterValue
			}
		case afterValue:
			if p[i] == ' ' || p[i] == '\t' {
				g.state = inValue // a continuation line
				continue
			}
			if g.namesFormKey() {
				return true
			}
			g.state, g.n = inName, 0
		}
	}
	return false
}

// namesFormKey reports whether the field read names a part a stack reads
// as _method.
func (g *formGuard) namesFormKey() bool {
	// Unfold as net/textproto does: each line without its line end and
	// the blanks around it, continuation lines joined with a space.
	v := g.value[:0]
	for rest, first := g.field, true; len(rest) > 0; first = false {
		line := rest
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			line, rest = bytes.TrimSuffix(rest[:j], []byte("\r")), rest[j+1:]
		} else {
			rest = nil
		}
		if !first {
			v = append(v, ' ')
		}
		v = append(v, bytes.Trim(line, " \t")...)
	}
	g.value = v
	if _, params, err := mime.ParseMediaType(string(v)); err == nil && readAsKey(params["name"], formKey) {
		return true
	}
	// Other parsers read the field otherwise: PHP's takes name= where
	// mime.ParseMediaType takes an RFC 2231 name*= beside it, and reads a
	// field mime.ParseMediaType refuses (a repeated parameter, say). Each
	// name parameter a lenient parser could find counts.
	return anyNameReadAsKey(v)
}

// anyNameReadAsKey reports whether a Content-Disposition value holds a
// parameter name (in any case, after a ';' and blanks) whose value, as a
// token or a quoted string (backslash escapes taken), a stack reads as
// the form key _method (keyMatch).
func anyNameReadAsKey(v []byte) bool {
	for rest := v; ; {
		i := bytes.IndexByte(rest, ';')
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+1:], " \t")
		if len(rest) < len("name") || !strings.EqualFold(string(rest[:len("name")]), "name") {
			continue
		}
		value, ok := bytes.CutPrefix(bytes.TrimLeft(rest[len("name"):], " \t"), []byte("="))
		if !ok {
			continue
		}
		value = bytes.TrimLeft(value, " \t")
		var name []byte
		if len(value) > 0 && value[0] == '"' {
			for j := 1; j < len(value) && value[j] != '"'; j++ {
				if value[j] == '\\' && j+1 < len(value) {
					j++
				}
				name = append(name, value[j])
			}
		} else {
			end := bytes.IndexAny(value, "; \t")
			if end < 0 {
				end = len(value)
			}
			name = value[:end]
		}
		if readAsKey(string(name), formKey) {
			return true
		}
	}
}
