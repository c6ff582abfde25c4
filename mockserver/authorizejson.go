package mockserver

// The body of /authorize, the server's hottest request, is first read by
// a small scanner that knows only the plain form of that body: the
// members of authorizeRequest, resourceRequest, decisionContext and
// decisionAttributes under their exact names, each at most once, strings
// of printable ASCII without escapes, arrays of those, white space
// between tokens, and nothing else: no other member, no null, no number,
// no escape, no other type. Whatever it does not know it gives up on,
// and decodeBody reads the body again with strictjson.Unmarshal, which
// accepts it or refuses it with its precise 400. A body the scanner
// accepts is one Unmarshal accepts, into the same value: it holds no
// member twice, none in another case and none unknown, so the strict rule
// has nothing to refuse (TestAuthorizeFastPathAgreesWithUnmarshal,
// FuzzAuthorizeFastPath). So the scanner decides nothing on its own; it
// spares the common request the reflective decoding, a third of a
// decision's time in the handler.

// fastBody is a request body with a fast reading (see above).
type fastBody interface {
	// decodeFast reads body, or reports false and leaves the value zero.
	decodeFast(body []byte) bool
}

func (req *authorizeRequest) decodeFast(body []byte) bool {
	room := new(authorizeRoom)
	sc := scanner{b: body, text: string(body), room: room, scopes: room.scopes[:0]}
	if !sc.authorize(req) || !sc.end() {
		*req = authorizeRequest{}
		return false
	}
	return true
}

// authorizeRoom is where the scanner puts what a usual authorize body
// holds, in one allocation: the context and its attributes, and the first
// resources and scopes (more go to slices of their own).
type authorizeRoom struct {
	ctx       decisionContext
	attrs     decisionAttributes
	resources [4]resourceRequest
	scopes    [8]string
}

// scanner reads the plain form of an authorize body; every method reports
// false where it gives up.
type scanner struct {
	b    []byte
	text string // b as a string: every string read is a piece of it, one allocation for all
	i    int
	room *authorizeRoom
	// scopes holds every resource's scopes one after the other; each
	// resource's Scopes is its piece.
	scopes []string
}

// stringByte classes the bytes of a string: plain (printable ASCII but
// the quote and the backslash), its end (the quote), or neither.
var stringByte = func() (t [256]uint8) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = plain
	}
	t['"'], t['\\'] = quote, 0
	return t
}()

const (
	plain = 1 + iota
	quote
)

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c, after white space.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek reports whether the next token starts with c, consuming nothing
// but white space.
func (s *scanner) peek(c byte) bool {
	s.space()
	return s.i < len(s.b) && s.b[s.i] == c
}

// raw returns the contents of a string of printable ASCII without
// escapes, and where they start.
func (s *scanner) raw() ([]byte, int, bool) {
	if !s.byte('"') {
		return nil, 0, false
	}
	start := s.i
	for i := start; i < len(s.b); i++ {
		switch stringByte[s.b[i]] {
		case plain:
		case quote:
			s.i = i + 1
			return s.b[start:i], start, true
		default:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

func (s *scanner) str(dst *string) bool {
	b, at, ok := s.raw()
	if ok {
		*dst = s.text[at : at+len(b)]
	}
	return ok
}

// object reads an object whose members are all among names, each at most
// once, calling member with the index of each.
func (s *scanner) object(names []string, member func(i int) bool) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	var seen uint64
	for {
		name, _, ok := s.raw()
		if !ok || !s.byte(':') {
			return false
		}
		i := 0
		for i < len(names) && names[i] != string(name) {
			i++
		}
		if i == len(names) || seen&(1<<i) != 0 || !member(i) {
			return false
		}
		seen |= 1 << i
		if s.byte('}') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// array reads an array, calling elem for each element.
func (s *scanner) array(elem func() bool) bool {
	if !s.byte('[') {
		return false
	}
	if s.byte(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.byte(']') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// end reports whether nothing but white space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

var (
	authorizeNames  = []string{"clientId", "resources", "context"}
	resourceNames   = []string{"name", "scopes"}
	contextNames    = []string{"attributes"}
	attributesNames = []string{"method", "path", "headers", "body"}
)

func (s *scanner) authorize(req *authorizeRequest) bool {
	return s.object(authorizeNames, func(i int) bool {
		switch i {
		case 0:
			return s.str(&req.ClientID)
		case 1:
			if !s.peek('[') {
				return false
			}
			req.Resources = s.room.resources[:0]
			return s.array(func() bool {
				var rr resourceRequest
				ok := s.resource(&rr)
				req.Resources = append(req.Resources, rr)
				return ok
			})
		default:
			req.Context = &s.room.ctx
			return s.object(contextNames, func(int) bool {
				req.Context.Attributes = &s.room.attrs
				return s.attributes(req.Context.Attributes)
			})
		}
	})
}

func (s *scanner) resource(rr *resourceRequest) bool {
	return s.object(resourceNames, func(i int) bool {
		if i == 0 {
			return s.str(&rr.Name)
		}
		if !s.peek('[') {
			return false
		}
		start := len(s.scopes)
		ok := s.array(func() bool {
			var sc string
			ok := s.str(&sc)
			s.scopes = append(s.scopes, sc)
			return ok
		})
		rr.Scopes = s.scopes[start:len(s.scopes):len(s.scopes)]
		return ok
	})
}

func (s *scanner) attributes(a *decisionAttributes) bool {
	return s.object(attributesNames, func(i int) bool {
		switch i {
		case 0:
			return s.str(&a.Method)
		case 1:
			return s.str(&a.Path)
		case 2:
			return s.str(&a.Headers)
		default:
			return s.str(&a.Body)
		}
	})
}
