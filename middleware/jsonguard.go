package middleware

import (
	"io"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// States of a jsonGuard, at the byte it reads next.
const (
	jsonOutside = iota // outside any string
	jsonString         // in a string
	jsonEscape         // after a '\' in a string
	jsonUnicode        // in the four hex digits of a \u escape
)

// jsonGuard is a POST body that Laravel reads as JSON (jsonContentType),
// which the middleware lets stream to the handler unread: Laravel then
// takes the method from its key _method (Symfony's Request::getMethod
// reads the JSON object as the request's form). The handler reads the
// bytes that were sent, except that the read that would complete a
// string, a key or a value, that is read as _method (keyMatch, on the
// string with its escapes decoded, \uXXXX included) fails with
// ErrFormMethodOverride, as does every read after it. A value as well as
// a key, and at any depth: the guard does not follow the JSON's
// structure, so that no reading of it can differ from a parser's.
//
// It holds a few bytes whatever is sent (the state of the string read so
// far, not its bytes), and a string split over two reads is matched as
// one. "payment_method" is not read as _method.
type jsonGuard struct {
	body  io.ReadCloser
	state int
	live  bool // in a string that may still be read as _method
	hex   rune // jsonUnicode: the digits read
	nhex  int
	key   keyMatch
	err   error
}

// Read implements io.Reader.
func (g *jsonGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.body.Read(p)
	if g.scan(p[:n]) || err == io.EOF && g.state != jsonOutside && g.live && g.key.matched() {
		g.err = ErrFormMethodOverride
		return 0, g.err
	}
	return n, err
}

// Close closes the body.
func (g *jsonGuard) Close() error { return g.body.Close() }

// scan reads p on from the guard's state and reports whether p completes
// a string read as _method.
func (g *jsonGuard) scan(p []byte) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch g.state {
		case jsonOutside:
			for i < len(p) && p[i] != '"' {
				i++
			}
			if i < len(p) {
				g.state, g.live = jsonString, true
				g.key.reset(formKey)
			}
		case jsonString:
			switch {
			case c == '"':
				g.state = jsonOutside
				if g.live && g.key.matched() {
					return true
				}
			case c == '\\':
				g.state = jsonEscape
			case g.live:
				if g.feed(c) {
					return true
				}
			}
		case jsonEscape:
			g.state = jsonString
			switch c {
			case 'u':
				g.state, g.hex, g.nhex = jsonUnicode, 0, 0
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			}
			if g.state == jsonString && g.live && g.feed(c) {
				return true
			}
		case jsonUnicode:
			if !ascii.IsHex(c) {
				// Not an escape a parser takes: the document is
				// refused by any; read on as a string.
				g.state = jsonString
				i--
				continue
			}
			g.hex, g.nhex = g.hex<<4|rune(ascii.Unhex(c)), g.nhex+1
			if g.nhex == 4 {
				g.state = jsonString
				b := byte(0x80) // a code point past ASCII, which no byte of the key matches
				if g.hex < 0x80 {
					b = byte(g.hex)
				}
				if g.live && g.feed(b) {
					return true
				}
			}
		}
	}
	return false
}

// feed reads the next byte of a string, decoded, and reports whether the
// string is read as _method whatever follows.
func (g *jsonGuard) feed(c byte) bool {
	g.key.feed(c)
	if g.key.decided() {
		g.live = false
		return g.key.matched()
	}
	return false
}
