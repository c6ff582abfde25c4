package middleware

import (
	"bytes"
	"io"
)

// keyGuard is a urlencoded POST body that the middleware lets stream to
// the handler unread, when _method is not trusted. The handler reads the
// bytes that were sent, except that the read that would complete a key
// that formKeys counts, exact or lookalike (a key any stack the middleware
// names reads as _method: keyMatch; in a pair cut by '&' or ';'), fails
// with ErrFormMethodOverride, as does every read after it. The key is
// complete at the first byte after which it is such a key whatever
// follows, or else at the '=' after it, the '&' or ';' that ends a pair
// without one, or the end of the body: no parser can tell the key from
// another before that byte, and r.ParseForm, which reads the body whole,
// fails without parsing any of it.
//
// The guard matches the current key as it arrives (keyMatch), holding a
// few bytes whatever is sent, and a key split over two reads is matched as
// one.
type keyGuard struct {
	body  io.ReadCloser
	inKey bool // in a key that may still be _method: after the start, a '&' or a ';'
	key   keyMatch
	err   error
}

func newKeyGuard(body io.ReadCloser) *keyGuard {
	g := &keyGuard{body: body, inKey: true}
	g.key.reset(formKey)
	return g
}

// Read implements io.Reader.
func (g *keyGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.body.Read(p)
	if g.scan(p[:n]) || err == io.EOF && g.inKey && g.key.matched() {
		g.err = ErrFormMethodOverride
		return 0, g.err
	}
	return n, err
}

// Close closes the body.
func (g *keyGuard) Close() error { return g.body.Close() }

// scan reads p on from the guard's state and reports whether p completes
// a key that formKeys counts.
func (g *keyGuard) scan(p []byte) bool {
	for i := 0; i < len(p); i++ {
		if !g.inKey {
			// In a value, or a key that cannot be _method: nothing to
			// keep up to the end of the pair.
			j := bytes.IndexAny(p[i:], "&;")
			if j < 0 {
				return false
			}
			i += j
		}
		switch c := p[i]; {
		case c == '&' || c == ';':
			if g.inKey && g.key.matched() {
				return true
			}
			g.inKey = true
			g.key.reset(formKey)
		case c == '=':
			if g.key.matched() {
				return true
			}
			g.inKey = false
		default:
			g.key.feedEscaped(c)
			if g.key.decided() {
				if g.key.matched() {
					return true
				}
				g.inKey = false
			}
		}
	}
	return false
}
