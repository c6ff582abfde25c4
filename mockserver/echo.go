package mockserver

import (
	"strconv"
	"strings"
)

// What an error repeats of the request (a-server12 F1, a-server13 F1): a
// caller sends a token or a client secret in the wrong place -- as the
// clientId a PEP was configured with, in a path segment, as a query
// parameter's name -- and an error that copies what it was sent puts the
// credential into the error string pep builds from the message, which
// applications log. So every error the server writes passes through one
// function, sayable (asAPIError for writeErr, the router's 404 and 405 and
// the UI's pages; azFailure for AuthZEN's error context; writeOAuthError
// and redirectError for the OAuth endpoints; challengeRealm for the realm
// of a WWW-Authenticate challenge): a caller's value is repeated
// only when it has the shape of one of the server's own identifiers
// (echoable), and a name in details[].field only when it has the shape of
// one of the API's field names (sayableField). Anything else is described
// by its length, not copied: neither its first bytes (the start of a client
// secret or an opaque token is secret itself) nor a digest (which a low-
// entropy secret can be guessed back from); the caller has what it sent,
// and the message still says where it was. Messages quote what a caller
// sent with %q: sayable reads each quoted string of a message, so a handler
// that quotes a caller's value need not remember the rule.

// maxEcho is the longest value an error repeats, in bytes: the server's
// longest identifiers, aliases and tenant names, are at most 63 bytes
// (aliasPattern, tenantNameRE); a UUID is 36. A token is longer.
const maxEcho = 63

// echoable reports whether an error may repeat v, a value a caller sent:
// 1 to maxEcho bytes of ASCII letters, digits and "-_.@:*", starting with
// a letter, a digit or '*' -- a UUID, an alias, a tenant's, client's,
// user's (an email address too), resource's or scope's name, the wildcard
// resource -- or a bad percent escape as url.EscapeError names it ("%zz",
// at most 3 bytes: no credential). An honest mistake (an unknown but
// well-shaped clientId) is still named; a token (longer) or a value with
// other bytes is not.
func echoable(v string) bool {
	if v == "" || len(v) > maxEcho {
		return false
	}
	if v[0] == '%' && len(v) <= 3 {
		return true
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '*':
		case i > 0 && (c == '-' || c == '_' || c == '.' || c == '@' || c == ':'):
		default:
			return false
		}
	}
	return true
}

// describe is what an error says in place of a value it does not repeat.
func describe(v string) string {
	return "(a value of " + strconv.Itoa(len(v)) + " bytes, not repeated)"
}

// sayableField returns f, a details[].field, with each of its
// dot-separated segments kept when it has the shape of a name of the API's
// schema -- a JSON member ("clientId", "scopes[1]", "resources[]") or a
// query parameter's name: at most maxFieldSegment bytes of ASCII letters,
// digits and "_[]", starting with a letter -- and described otherwise, so
// that "resources[].ſcopes" still says where the member was. A JWT's
// payload and signature are longer than a segment.
func sayableField(f string) string {
	if fieldSegment(f) {
		return f // the usual case allocates nothing
	}
	segs := strings.Split(f, ".")
	for i, seg := range segs {
		if !fieldSegment(seg) {
			segs[i] = "(a name of " + strconv.Itoa(len(seg)) + " bytes, not repeated)"
		}
	}
	return strings.Join(segs, ".")
}

// maxFieldSegment is the longest segment of a field name an error repeats,
// in bytes: the API's longest member names are about 20 bytes; a JWT's
// payload and signature (43 bytes at the least) are longer.
const maxFieldSegment = 32

// fieldSegment reports whether s has the shape of a name of the API's
// schema (sayableField).
func fieldSegment(s string) bool {
	if s == "" || len(s) > maxFieldSegment || !('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// sayable returns msg, an error's message, as the server may write it:
// each quoted string in it (strconv.Quote's form, what %q writes) is kept
// when echoable and otherwise described; a quoted path ("/a/b") is kept
// segment by segment, so "no route" still names the route it was asked
// for. A run of more than maxEcho bytes with no space, slash or quote in
// the rest of the message (a value formatted with %s by mistake) is
// described too.
func sayable(msg string) string {
	if fits(msg) {
		return msg // the usual case allocates nothing
	}
	var b strings.Builder
	for msg != "" {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			sayBare(&b, msg)
			break
		}
		sayBare(&b, msg[:i])
		q, err := strconv.QuotedPrefix(msg[i:])
		if err != nil { // a lone quote: the rest is bare text
			b.WriteByte('"')
			msg = msg[i+1:]
			continue
		}
		v, _ := strconv.Unquote(q) // QuotedPrefix's answer unquotes
		switch {
		case echoable(v):
			b.WriteString(q)
		case strings.HasPrefix(v, "/"):
			b.WriteString(strconv.Quote(sayablePath(v)))
		default:
			b.WriteString(describe(v))
		}
		msg = msg[i+len(q):]
	}
	return b.String()
}

// fits reports whether msg holds no quoted string and no run sayBare
// describes: sayable returns it as it is.
func fits(msg string) bool {
	if strings.IndexByte(msg, '"') >= 0 {
		return false
	}
	run := 0
	for i := 0; i < len(msg); i++ {
		if bareBreak(msg[i]) {
			run = 0
		} else if run++; run > maxEcho {
			return false
		}
	}
	return true
}

// bareBreak reports whether c ends a run of unquoted text.
func bareBreak(c byte) bool { return c == ' ' || c == '/' || c == '\t' || c == '\n' }

// sayBare writes s, unquoted text of a message, to b, describing each run
// of more than maxEcho bytes without a break (bareBreak).
func sayBare(b *strings.Builder, s string) {
	for s != "" {
		i := 0
		for i < len(s) && bareBreak(s[i]) {
			i++
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := 0
		for j < len(s) && !bareBreak(s[j]) {
			j++
		}
		if j > maxEcho {
			b.WriteString(describe(s[:j]))
		} else {
			b.WriteString(s[:j])
		}
		s = s[j:]
	}
}

// sayablePath returns path with each segment that is not echoable
// described.
func sayablePath(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s != "" && !echoable(s) {
			segs[i] = describe(s)
		}
	}
	return strings.Join(segs, "/")
}

// sayableError returns ae as the server may write it: its message through
// sayable and each detail's field through sayableField and message through
// sayable; a field that is not said is not said in the message either
// (the "field: problem" of badField's message). ae itself is not changed;
// it is returned as it is when it says nothing it may not.
func sayableError(ae *apiError) *apiError {
	if fits(ae.message) && len(ae.details) == 0 {
		return ae // the usual case allocates nothing
	}
	out := &apiError{status: ae.status, message: ae.message}
	if len(ae.details) > 0 {
		// Each detail's field and message are said by the same rules.
		out.details = make([]fieldError, len(ae.details))
		for i, d := range ae.details {
			f := sayableField(d.Field)
			if f != d.Field && strings.HasPrefix(out.message, d.Field+": ") {
				out.message = f + out.message[len(d.Field):]
			}
			out.details[i] = fieldError{Field: f, Message: sayable(d.Message)}
		}
	}
	out.message = sayable(out.message)
	return out
}

// challengeRealm is the realm parameter of a WWW-Authenticate challenge for
// realm, the path's realm value: the realm when echoable, else its
// description (the parameter is a quoted-string either way).
func challengeRealm(realm string) string {
	if echoable(realm) {
		return "realm=" + strconv.Quote(realm)
	}
	return "realm=" + strconv.Quote(describe(realm))
}
