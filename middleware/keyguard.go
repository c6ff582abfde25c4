package middleware

import (
	"bytes"
	"io"
)

// maxKeyBytes is the longest urlencoded key that can decode to _method in
// some case: each of its bytes escaped as %XX.
const maxKeyBytes = 3 * len(formKey)

// keyGuard is a urlencoded POST body that the middleware lets stream to
// the handler unread, when _method is not trusted. The handler reads the
// bytes that were sent, except that the read that would complete a key
// that formKeys counts, exact or lookalike (_method in any case, escaped
// or not, in a pair cut by '&' or ';'), fails with ErrFormMethodOverride,
// as does every read after it. The key is complete at the '=' after it,
// the '&' or ';' that ends a pair without one, or the end of the body: no
// parser can tell the key from a longer one before that byte, and
// r.ParseForm, which reads the body whole, fails without parsing any of it.
//
// The guard keeps the current key only while it could still be _method (at
// most maxKeyBytes bytes): what it holds is bounded whatever is sent, and a
// key split over two reads is matched as one.
type keyGuard struct {
	body  io.ReadCloser
	inKey bool // at a key: after the start, a '&' or a ';'
	long  bool // the current key is longer than maxKeyBytes
	n     int
	key   [maxKeyBytes]byte
	err   error
}

func newKeyGuard(body io.ReadCloser) *keyGuard { return &keyGuard{body: body, inKey: true} }

// Read implements io.Reader.
func (g *keyGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.body.Read(p)
	if g.scan(p[:n]) || err == io.EOF && g.inKey && g.keyIsFormKey() {
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
			// In a value: nothing to keep up to the end of the pair.
			j := bytes.IndexAny(p[i:], "&;")
			if j < 0 {
				return false
			}
			i += j
		}
		switch c := p[i]; {
		case c == '&' || c == ';':
			if g.inKey && g.keyIsFormKey() {
				return true
			}
			g.inKey, g.long, g.n = true, false, 0
		case !g.inKey:
		case c == '=':
			if g.keyIsFormKey() {
				return true
			}
			g.inKey = false
		case g.n < len(g.key):
			g.key[g.n] = c
			g.n++
		default:
			g.long = true
		}
	}
	return false
}

// keyIsFormKey reports whether the key read is _method in some case,
// escaped or not, as formKeys counts it.
func (g *keyGuard) keyIsFormKey() bool {
	if g.long {
		return false
	}
	match, _ := isFormKey(g.key[:g.n])
	return match
}
