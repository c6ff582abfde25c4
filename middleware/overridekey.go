package middleware

import "github.com/orgauthz/orgauthz/internal/ascii"

// Which form keys a stack behind the middleware reads as the override key.
//
// The stacks the middleware names (override.go) parse a form key each in
// their own way before they look it up, and the middleware must refuse
// every key any of them reads as the override key, not only the one
// net/http reads. One matcher, keyMatch, decides it for the query
// (formKeys), for a urlencoded body read whole (formKeys) or streamed
// (keyGuard), and for the name of a multipart part (formGuard), as the
// union of these readings of the key:
//
//   - net/http (url.ParseQuery): the key unescaped ('+' is a space, %XX a
//     byte); the middleware also takes the key in any ASCII case;
//   - PHP (php_register_variable, so $_GET and $_POST, which Symfony and
//     Laravel read _method from, and multipart part names): leading spaces
//     dropped, the name cut at a NUL byte, ' ' and '.' (and a '[' that no
//     ']' closes) read as '_', and a name followed by "[...]" an array
//     under that name;
//   - Rack 2 (parse_nested_query): leading '[' and ']' dropped, the name
//     ends at the next '[' or ']';
//   - Rack 3: the name ends at a '[' after its first byte;
//   - Express (qs, body-parser's extended parser; multer's append-field):
//     "[name]" is name, and "name[]" or "name[0]" an array under name,
//     whose first value method-override takes.
//
// So a key is read as the override key k when, unescaped (a '%' that does
// not start two hex digits stays as it is, as PHP leaves it), it is a run
// of ' ', '[' and ']', then k, where a byte of k matches itself in any
// ASCII case and a '_' of k also matches '.' or '[' (and ' ', past the
// key's first byte), then either nothing, or '[', ']' or a NUL byte
// followed by anything. That is a superset of each reading: it also takes
// keys no stack reads as k (" [_method", "_method]x"), which no form sends.

// keyMatch reads one form key, byte by byte, and tells whether it is read
// as the override key (see above). Its zero value is not ready: start it
// with reset. It holds a fixed few bytes whatever the key's length, so a
// key split over two reads of a streamed body is matched as one.
type keyMatch struct {
	key  string // the override key, lower-case, at most 63 bytes
	at   uint64 // bit i: the key read so far can be followed by key[i:]; bit 0: still in the leading run
	done bool   // the key read so far is the override key whatever follows
	pend [2]byte
	npen int // pend[:npen] is an escape begun: "%" or "%" and one hex digit
}

// reset starts reading a new key, for the override key key.
func (m *keyMatch) reset(key string) { *m = keyMatch{key: key, at: 1} }

// matched reports whether the key read is the override key; call it once
// the key ended (it takes a pending escape as it was sent).
func (m *keyMatch) matched() bool {
	m.flush()
	return m.done || m.at&(1<<len(m.key)) != 0
}

// decided reports whether the bytes still to come cannot change matched:
// the key is the override key whatever follows, or can no longer be.
func (m *keyMatch) decided() bool { return m.done || m.at == 0 && m.npen == 0 }

// feedEscaped reads the next byte of a urlencoded key as sent: '+' is a
// space and %XX the byte it escapes.
func (m *keyMatch) feedEscaped(b byte) {
	switch {
	case m.npen == 1 && ascii.IsHex(b):
		m.pend[1], m.npen = b, 2
	case m.npen == 2 && ascii.IsHex(b):
		m.npen = 0
		m.feed(ascii.Unhex(m.pend[1])<<4 | ascii.Unhex(b))
	case m.npen > 0:
		// Not an escape: the bytes as they were sent.
		m.flush()
		m.feedEscaped(b)
	case b == '%':
		m.pend[0], m.npen = b, 1
	case b == '+':
		m.feed(' ')
	default:
		m.feed(b)
	}
}

// flush reads the bytes of an escape that did not complete as sent.
func (m *keyMatch) flush() {
	n := m.npen
	m.npen = 0
	for _, c := range m.pend[:n] {
		m.feed(c)
	}
}

// feed reads the next byte of the key, unescaped.
func (m *keyMatch) feed(c byte) {
	if m.done {
		return
	}
	full := uint64(1) << len(m.key)
	if m.at&full != 0 && (c == '[' || c == ']' || c == 0) {
		m.done = true
		return
	}
	var next uint64
	if m.at&1 != 0 && (c == ' ' || c == '[' || c == ']') {
		next |= 1 // still in the leading run
	}
	for i := 0; i < len(m.key); i++ {
		if m.at&(1<<i) != 0 && keyByte(c, m.key[i], i) {
			next |= 1 << (i + 1)
		}
	}
	m.at = next
}

// keyByte reports whether c, at offset i of a key, reads as k, the
// override key's byte there.
func keyByte(c, k byte, i int) bool {
	return ascii.LowerByte(c) == k || k == '_' && (c == '.' || c == '[' || c == ' ' && i > 0)
}

// readAsKey reports whether a form key, as a multipart part's name (not
// escaped), is read as the override key key.
func readAsKey(name, key string) bool {
	var m keyMatch
	m.reset(key)
	for i := 0; i < len(name) && !m.decided(); i++ {
		m.feed(name[i])
	}
	return m.matched()
}
