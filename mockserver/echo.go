package mockserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// What an error repeats of the request (a-server12 F1, a-server13 F1,
// a-fix13c F1): a caller sends a token or a client secret in the wrong
// place -- as the clientId a PEP was configured with, in a path segment,
// as a query parameter's name -- and an error that copies what it was sent
// puts the credential into the error string pep builds from the message,
// which applications log. So every error the server writes passes through
// one function, sayable (asAPIError for writeErr, the router's 404 and 405
// and the UI's pages; the AuthZEN evaluator's failure for its error
// context; writeOAuthError and redirectError for the OAuth endpoints;
// challengeRealm for the realm of a WWW-Authenticate challenge): a caller's
// value is repeated only when the server already knows it as public
// (echoable: the wildcard, a word of the API, a realm's name, the id of an
// object the caller's own realm holds -- not any UUID, a-fix14 F2, and not
// another tenant's, a-fix14d), and a
// name in details[].field only when it is a name of the API's schema or a
// realm's (sayableField). The shape of a
// value decides nothing: every secret the server makes -- a client secret,
// a tenant's initial password, an authorization code -- has an
// identifier's shape. Anything else is described by its length, not
// copied: neither its first bytes (the start of a client secret or an
// opaque token is secret itself) nor a digest (which a low-entropy secret
// can be guessed back from); the caller has what it sent, and the message
// still says where it was. sayable reads each quoted string of a message,
// and the constructors of the service's errors, errf and badField, quote
// every argument that is not a number or said text themselves, whatever
// its verb (quoteArgs, a-server14 F1: "origin %s", "method %s" let a
// caller's value through whole): a handler need not remember the rule, and
// cannot put a caller's value where sayable does not look but by said,
// each use of which TestOnlyTheServersTextIsSaid lists with its reason.
// The same rule keeps a single caller value on every other channel that
// keeps or repeats request data (keep: the audit's resourceId, a
// challenge's realm, the explanation of a denial). The store is asked
// only on an error's path, only about a value of an identifier's shape, and
// at most maxLookups times an error.

// maxEcho is the longest value an error repeats, in bytes: the server's
// longest identifiers, aliases and tenant names, are at most 63 bytes
// (aliasPattern, tenantNameRE); a UUID is 36. A token is longer.
const maxEcho = 63

// knower reports whether a value of an identifier's shape is a name the
// server publishes or the id of an object it holds (Server.publicName; an
// AuthZEN evaluation's realm, azEvaluator.publicName). nil knows no name
// and no id: only the wildcard and the API's own words are repeated.
type knower func(v string) bool

// maxLookups is how many of one error's values the store is asked about
// (knower): a path of thousands of segments, which the router's 404 quotes,
// would otherwise cost a lookup each (a walk of a realm's clients and
// templates, for an AuthZEN evaluation's knower). Values past it are
// described.
const maxLookups = 16

// budgeted returns known limited to maxLookups answers, nil for nil.
func budgeted(known knower) knower {
	if known == nil {
		return nil
	}
	n := 0
	return func(v string) bool {
		if n >= maxLookups {
			return false
		}
		n++
		return known(v)
	}
}

// echoable reports whether an error may repeat v, a value a caller sent.
// Whether a value may be repeated is a property of the value, not of its
// shape: every secret the server makes (a client secret, an initial
// password, an authorization code) has an identifier's shape too (a-fix13c
// F1), and so has a UUID (a-fix14 F2: an admin secret made by uuidgen, a
// client secret exported from a Keycloak that made UUID secrets). So v is
// repeated only when it is the wildcard "*", a word of the API itself (a
// route's segment, a member's or a parameter's name, an enumerated value:
// apiWords), a bad percent escape as url.EscapeError names it ("%zz", at
// most 3 bytes: no credential), or a value the server knows and publishes
// (known: a realm's name or the id of an object the caller's realm holds,
// and for an AuthZEN evaluation its realm's names and ids). An unknown value,
// however well-shaped -- a UUID the server never assigned too -- is
// described by its length; nil knows nothing.
func echoable(v string, known knower) bool {
	if v == "" || len(v) > maxEcho {
		return false
	}
	if v[0] == '%' && len(v) <= 3 {
		return true
	}
	if !identifierShape(v) {
		return false
	}
	if v == "*" || apiWords()[v] {
		return true
	}
	return known != nil && known(v)
}

// identifierShape reports whether v, at most maxEcho bytes, has the shape
// of one of the server's identifiers: ASCII letters, digits and "-_.@:*",
// starting with a letter, a digit or '*'. Only a value of that shape can be
// a name the server publishes; the rest is not looked up.
func identifierShape(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '*':
		case i > 0 && (c == '-' || c == '_' || c == '.' || c == '@' || c == ':'):
		default:
			return false
		}
	}
	return v != ""
}

// apiWords is the set of the API's own words, read from the OpenAPI
// document once, on the first error that needs it: each literal segment of
// a path, each member's and parameter's name, each enumerated value. They
// are the server's, not a caller's, and name no credential.
var apiWords = sync.OnceValue(func() map[string]bool {
	words := map[string]bool{authzenSubjectType: true, "Host": true}
	for _, w := range oauthParams {
		words[w] = true
	}
	walkAPI(func(m map[string]any) {
		props, _ := m["properties"].(map[string]any)
		for name := range props {
			words[name] = true
		}
		if name, ok := m["name"].(string); ok && m["in"] != nil {
			words[name] = true
		}
	})
	var doc struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	_ = json.Unmarshal(openAPIDocument, &doc) // the embedded document parses (TestOpenAPI)
	for p := range doc.Paths {
		for _, seg := range strings.Split(p, "/") {
			if seg != "" && !strings.HasPrefix(seg, "{") {
				words[seg] = true
			}
		}
	}
	walkAPI(func(m map[string]any) {
		enum, _ := m["enum"].([]any)
		for _, e := range enum {
			if s, ok := e.(string); ok && s != "" {
				words[s] = true
			}
		}
	})
	return words
})

// oauthParams are the names of the OAuth parameters an OAuth endpoint's
// error may name (a-fix14 F1): those of the IANA "OAuth Parameters"
// registry and OpenID Connect's authorization request that the server
// reads, refuses or is likely to be sent -- a fixed list, the server's
// words. A parameter's name that is not one, nor another word of the API,
// is described however it is shaped: a passphrase of lower-case letters
// and '_' sent where a name goes was repeated by its shape (paramName).
var oauthParams = [...]string{
	"client_id", "client_secret", "grant_type", "code", "redirect_uri", "scope", "state",
	"response_type", "response_mode", "username", "password", "refresh_token", "access_token",
	"id_token", "token", "token_type", "token_type_hint", "expires_in", "code_verifier",
	"code_challenge", "code_challenge_method", "nonce", "prompt", "max_age", "login_hint",
	"id_token_hint", "acr_values", "ui_locales", "display", "claims", "claims_locales",
	"request", "request_uri", "registration", "resource", "audience", "authorization_details",
	"dpop_jkt", "client_assertion", "client_assertion_type", "assertion", "subject_token",
	"subject_token_type", "actor_token", "actor_token_type", "requested_token_type",
	"error", "error_description", "error_uri", "iss", "session_state",
}

// apiMembers is the set of the names of the API's schema, lower-cased,
// read from the OpenAPI document once: each member of an object and each
// parameter (query, path, header), and the Host header the server checks.
// A details[].field is made of them, or of one in another case (a member
// the server refuses for its case: "Resources").
var apiMembers = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{"host": true}
	walkAPI(func(m map[string]any) {
		props, _ := m["properties"].(map[string]any)
		for name := range props {
			names[strings.ToLower(name)] = true
		}
		if name, ok := m["name"].(string); ok && m["in"] != nil {
			names[strings.ToLower(name)] = true
		}
	})
	return names
})

// walkAPI calls fn with each object of the OpenAPI document.
func walkAPI(fn func(map[string]any)) {
	var doc any
	_ = json.Unmarshal(openAPIDocument, &doc)
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			fn(v)
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}

// describe is what an error says in place of a value it does not repeat.
func describe(v string) string {
	return "(a value of " + bytesOf(v) + ", not repeated)"
}

// bytesOf is v's length as a message says it: "1 byte", "14 bytes".
func bytesOf(v string) string {
	if len(v) == 1 {
		return "1 byte"
	}
	return strconv.Itoa(len(v)) + " bytes"
}

// keep returns v, a single value a caller sent, as every channel that
// keeps or repeats request data keeps it -- an error's realm parameter
// (challengeRealm), the admin audit's resourceId (recordAudit): whole when
// echoable, else described by its length; "" stays "". It is the rule
// sayable applies to each quoted string of a message, for a value kept on
// its own. The audit is no exception (a-server14 F2): a credential pasted
// where an id goes was kept whole there (or its first 32 bytes and a
// digest), and answered by GET /admin/audit to the platform's operators.
func keep(v string, known knower) string {
	if v == "" || echoable(v, known) {
		return v
	}
	return describe(v)
}

// sayableField returns f, a details[].field, with each of its
// dot-separated segments kept when it is a name of the API's schema -- a
// JSON member ("clientId", "scopes[1]", "resources[]") or a parameter's
// name (apiMembers), with its indexes -- or a name the server publishes
// (known: an attribute's key that a property template defines) and
// described otherwise, so that "resources[].ſcopes" still says where the
// member was. A short word that is neither (a secret, a JWT's header) is
// not repeated.
func sayableField(f string, known knower) string {
	if fieldSegment(f, known) {
		return f // the usual case allocates nothing
	}
	segs := strings.Split(f, ".")
	for i, seg := range segs {
		if !fieldSegment(seg, known) {
			segs[i] = "(a name of " + bytesOf(seg) + ", not repeated)"
		}
	}
	return strings.Join(segs, ".")
}

// maxFieldSegment is the longest segment of a field name an error repeats,
// in bytes: the API's longest member names are about 20 bytes.
const maxFieldSegment = 32

// fieldSegment reports whether s is a name of the API's schema
// (apiMembers) or one the server publishes (known), followed by indexes
// ("[]", "[12]"), as sayableField keeps it.
func fieldSegment(s string, known knower) bool {
	if s == "" || len(s) > maxFieldSegment {
		return false
	}
	name := s
	if i := strings.IndexByte(s, '['); i >= 0 {
		name = s[:i]
		for rest := s[i:]; rest != ""; {
			if rest[0] != '[' {
				return false
			}
			j := strings.IndexByte(rest, ']')
			if j < 0 {
				return false
			}
			for _, c := range []byte(rest[1:j]) {
				if c < '0' || c > '9' {
					return false
				}
			}
			rest = rest[j+1:]
		}
	}
	return apiMembers()[strings.ToLower(name)] || known != nil && identifierShape(name) && known(name)
}

// sayable returns msg, an error's message, as the server may write it:
// each quoted string in it (strconv.Quote's form, what %q writes) is kept
// when echoable and otherwise described; a quoted path ("/a/b") is kept
// segment by segment, so "no route" still names the route it was asked
// for. A run of more than maxEcho bytes with no space, slash or quote in
// the rest of the message (a value formatted with %s by mistake) is
// described too.
func sayable(msg string, known knower) string {
	if fits(msg) {
		return msg // the usual case allocates nothing
	}
	return sayQuoted(msg, budgeted(known))
}

// sayQuoted is sayable of a message that does not fit, known budgeted.
func sayQuoted(msg string, known knower) string {
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
		case echoable(v, known):
			b.WriteString(q)
		case strings.HasPrefix(v, "/"):
			b.WriteString(strconv.Quote(sayablePath(v, known)))
		default:
			b.WriteString(describe(v))
		}
		msg = msg[i+len(q):]
	}
	return b.String()
}

// sayableBudgeted is sayable with known already budgeted.
func sayableBudgeted(msg string, known knower) string {
	if fits(msg) {
		return msg
	}
	return sayQuoted(msg, known)
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
func sayablePath(path string, known knower) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s != "" && !echoable(s, known) {
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
func sayableError(ae *apiError, known knower) *apiError {
	if fits(ae.message) && len(ae.details) == 0 {
		return ae // the usual case allocates nothing
	}
	known = budgeted(known) // one budget for the whole error
	out := &apiError{status: ae.status, message: ae.message}
	if len(ae.details) > 0 {
		// Each detail's field and message are said by the same rules.
		out.details = make([]fieldError, len(ae.details))
		for i, d := range ae.details {
			f := sayableField(d.Field, known)
			if f != d.Field && strings.HasPrefix(out.message, d.Field+": ") {
				out.message = f + out.message[len(d.Field):]
			}
			out.details[i] = fieldError{Field: f, Message: sayableBudgeted(d.Message, known)}
		}
	}
	out.message = sayableBudgeted(out.message, known)
	return out
}

// challengeRealm is the realm parameter of a WWW-Authenticate challenge for
// realm, the path's realm value: the realm when echoable, else its
// description (the parameter is a quoted-string either way).
func challengeRealm(realm string, known knower) string {
	if realm == "" {
		return "realm=" + strconv.Quote(describe(realm))
	}
	return "realm=" + strconv.Quote(keep(realm, known))
}

// publicName is the knower of an answer to any caller: whether v is a live
// realm's name (store.Store.PublicName), the only values every caller
// knows. It knows no id: an error seen by any caller knows only what any
// caller knows, and an id is known to the callers of the realm that holds
// it (callerKnows). Looking ids up in every realm told any caller whether
// some tenant holds an id, at a cost that grew with the number of tenants
// (a-fix14d).
func (s *Server) publicName(v string) bool { return s.store.PublicName(v) }

// callerKnows is the knower of an answer to c, an authenticated caller: a
// live realm's name, or the id of an object c's own realm holds (knowerIn).
// A nil c is any caller (publicName).
func (s *Server) callerKnows(c *caller) knower {
	if c == nil {
		return s.publicName
	}
	return s.knowerIn(c.rm)
}

// pathRealmKnows is the knower of an answer to r, a request to a realm
// administration endpoint, whose caller protect authenticated for the
// path's realm: knowerIn that realm.
func (s *Server) pathRealmKnows(r *http.Request) knower {
	rm, _ := s.store.Lookup(r.PathValue("realm"))
	return s.knowerIn(rm)
}

// knowerIn is the knower of an answer to a caller authenticated for rm: a
// live realm's name, or the id of an object rm holds (store.Realm.TryHoldsID:
// an id is repeated because the server assigned it and told it to that
// realm's callers, not because of its form, a-fix14 F2; never looked up in
// another realm, a-fix14d). rm is read only when its read lock is free at
// once: a realm being written answers no, and the error describes the
// value instead. A writer that already holds rm's lock uses realmKnows. A
// nil rm knows what publicName knows.
func (s *Server) knowerIn(rm *store.Realm) knower {
	if rm == nil {
		return s.publicName
	}
	return func(v string) bool { return s.store.PublicName(v) || rm.TryHoldsID(v) }
}

// realmKnows is the knower of a writer that holds rm's lock (Read, Write):
// a name rm publishes (store.Realm.PublicName) or the id of an object it
// holds (store.Realm.HoldsID). The denial log and an AuthZEN evaluation's
// errors use it.
func realmKnows(rm *store.Realm) knower {
	return func(v string) bool { return rm.PublicName(v) || rm.HoldsID(v) }
}
