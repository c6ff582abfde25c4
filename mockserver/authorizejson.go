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

// plainByte reports the bytes a plain string holds: printable ASCII but
// the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

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

// quoted reads a string of printable ASCII without escapes, after white
// space, and returns where its contents start and end in b (and text).
func (s *scanner) quoted() (start, end int, ok bool) {
	s.space()
	b, i := s.b, s.i // in registers for the loop
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	i++
	start = i
	for ; i < len(b); i++ {
		if c := b[i]; !plainByte[c] {
			if c != '"' {
				return 0, 0, false
			}
			s.i = i + 1
			return start, i, true
		}
	}
	return 0, 0, false
}

// str reads a string into dst, a piece of text.
func (s *scanner) str(dst *string) bool {
	start, end, ok := s.quoted()
	if ok {
		*dst = s.text[start:end]
	}
	return ok
}

// name reads a member's name and its colon.
func (s *scanner) name() (string, bool) {
	start, end, ok := s.quoted()
	if !ok || !s.byte(':') {
		return "", false
	}
	return s.text[start:end], true
}

// next reads what follows a member or an element: last (the object's
// or the array's end: done) or a comma (another one comes).
func (s *scanner) next(last byte) (done, ok bool) {
	if s.byte(last) {
		return true, true
	}
	return false, s.byte(',')
}

// end reports whether nothing but white space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// Each object below is read member by member (object), a member's name
// checked against the object's own (a switch, not a list) and its bit in
// seen (once), so that a name given twice is given up on.

// object reads an object whose members member reads, given each name; it
// gives up where member does.
func (s *scanner) object(member func(name string) bool) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	for {
		name, ok := s.name()
		if !ok || !member(name) {
			return false
		}
		if done, ok := s.next('}'); done || !ok {
			return ok
		}
	}
}

// once reports whether bit is not in seen yet, and sets it.
func once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

func (s *scanner) authorize(req *authorizeRequest) bool {
	var seen uint8
	return s.object(func(name string) bool {
		switch {
		case name == "clientId" && once(&seen, 1):
			return s.str(&req.ClientID)
		case name == "resources" && once(&seen, 2):
			return s.resources(req)
		case name == "context" && once(&seen, 4):
			return s.context(req)
		}
		return false
	})
}

func (s *scanner) resources(req *authorizeRequest) bool {
	if !s.byte('[') {
		return false
	}
	req.Resources = s.room.resources[:0]
	if s.byte(']') {
		return true
	}
	for {
		var rr resourceRequest
		if !s.resource(&rr) {
			return false
		}
		req.Resources = append(req.Resources, rr)
		if done, ok := s.next(']'); done || !ok {
			return ok
		}
	}
}

func (s *scanner) resource(rr *resourceRequest) bool {
	var seen uint8
	return s.object(func(name string) bool {
		switch {
		case name == "name" && once(&seen, 1):
			return s.str(&rr.Name)
		case name == "scopes" && once(&seen, 2):
			return s.scopeList(rr)
		}
		return false
	})
}

// scopeList reads a resource's scopes into the scanner's list of every
// resource's scopes, and the resource's piece of it.
func (s *scanner) scopeList(rr *resourceRequest) bool {
	if !s.byte('[') {
		return false
	}
	start := len(s.scopes)
	if !s.byte(']') {
		for {
			var sc string
			if !s.str(&sc) {
				return false
			}
			s.scopes = append(s.scopes, sc)
			if done, ok := s.next(']'); !ok {
				return false
			} else if done {
				break
			}
		}
	}
	rr.Scopes = s.scopes[start:len(s.scopes):len(s.scopes)]
	return true
}

// context reads the context: an object of attributes, once, at most.
func (s *scanner) context(req *authorizeRequest) bool {
	req.Context = &s.room.ctx // decodeFast zeroes req where the scanner gives up
	var seen uint8
	return s.object(func(name string) bool {
		if name != "attributes" || !once(&seen, 1) {
			return false
		}
		req.Context.Attributes = &s.room.attrs
		return s.attributes(req.Context.Attributes)
	})
}

func (s *scanner) attributes(a *decisionAttributes) bool {
	var seen uint8
	return s.object(func(name string) bool {
		switch {
		case name == "method" && once(&seen, 1):
			return s.str(&a.Method)
		case name == "path" && once(&seen, 2):
			return s.str(&a.Path)
		case name == "headers" && once(&seen, 4):
			return s.str(&a.Headers)
		case name == "body" && once(&seen, 8):
			return s.str(&a.Body)
		}
		return false
	})
}
