package mockserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/orgauthz/orgauthz/internal/strictjson"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// maxBody is the largest request body the server reads.
const maxBody = 1 << 20

// errorBody is the service's error shape; details name the fields at fault
// on a 400 (an extension of the specification's shape).
type errorBody struct {
	Error   string       `json:"error"`
	Message string       `json:"message"`
	Details []fieldError `json:"details,omitempty"`
}

// fieldError names one invalid field of a 400 answer.
type fieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// apiError is an HTTP answer other than success, built by handlers and
// written by writeErr.
type apiError struct {
	status  int
	message string
	details []fieldError
}

func (e *apiError) Error() string { return e.message }

// errf builds an apiError with a formatted message. Every argument but a
// number and said text is written quoted, whatever its verb (quoteArgs).
func errf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, message: fmt.Sprintf(format, quoteArgs(args)...)}
}

// badField builds a 400 naming one field, its message formatted as errf's.
func badField(field, format string, args ...any) *apiError {
	msg := fmt.Sprintf(format, quoteArgs(args)...)
	return &apiError{status: http.StatusBadRequest, message: field + ": " + msg,
		details: []fieldError{{Field: field, Message: msg}}}
}

// said is text of the server's own that errf and badField put into a
// message as it is: a message composed by these same rules (an
// authentication failure's, a store error's, a JSON decoder's), a list of
// the API's words, a standard method's name. The message is read by
// sayable as any other, so a value quoted inside it is still kept or
// described by the errors' rule; said only says the text around it is not
// a caller's. A caller's value is never said.
type said string

// quoteArgs returns args with each argument that is not a number, a
// boolean or said text replaced by one that formats as strconv.Quote of
// its text (fmt.Sprint), whatever the verb (a-server14 F1): sayable reads
// each quoted string of a message and describes a value it may not
// repeat, so a message cannot carry a caller's value where sayable does
// not look, as "origin %s" and "method %s" did. %q writes what it wrote
// before.
func quoteArgs(args []any) []any {
	out := make([]any, len(args)) // a caller's args... is not written to
	for i, a := range args {
		if _, ok := a.(said); ok || number(a) {
			out[i] = a
			continue
		}
		out[i] = quotedArg{a}
	}
	return out
}

// number reports whether a is a number or a boolean with no text of its
// own (no String, Error or Format method), which quoteArgs leaves to its
// verb (%d, %g).
func number(a any) bool {
	switch a.(type) {
	case fmt.Stringer, error, fmt.Formatter:
		return false
	}
	switch reflect.ValueOf(a).Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// quotedArg formats as strconv.Quote of its value's text, for every verb.
type quotedArg struct{ v any }

// Format writes q's value quoted.
func (q quotedArg) Format(f fmt.State, _ rune) {
	_, _ = io.WriteString(f, strconv.Quote(fmt.Sprint(q.v)))
}

// writeJSON writes v as the JSON body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeResult writes {"result": v}.
func writeResult(w http.ResponseWriter, status int, v any) {
	writeJSON(w, status, resultBody{Result: v})
}

// resultBody is the envelope of a single resource's answer. A struct, not a
// map: the same bytes without a map to allocate and sort.
type resultBody struct {
	Result any `json:"result"`
}

// writeErr writes err as the service's error body. Store errors map to 404,
// 409 and 400; an apiError keeps its status; anything else is a 500 whose
// message does not leak internals.
func (s *Server) writeErr(w http.ResponseWriter, err error) {
	s.writeErrKnowing(w, err, s.publicName)
}

// writeErrFor is writeErr of an answer to c, an authenticated caller, whose
// message may repeat the ids c's realm holds (callerKnows); a nil c is
// any caller.
func (s *Server) writeErrFor(w http.ResponseWriter, c *caller, err error) {
	s.writeErrKnowing(w, err, s.callerKnows(c))
}

// writeErrKnowing writes err as the service's error body, repeating of
// what the caller sent only what known knows (sayableError): every writer
// of the service's JSON errors ends here.
func (s *Server) writeErrKnowing(w http.ResponseWriter, err error, known knower) {
	ae := sayableError(s.statusOf(err), known)
	writeJSON(w, ae.status, errorBody{Error: http.StatusText(ae.status), Message: ae.message, Details: ae.details})
}

// asAPIError is the status and message writeErr answers err with, as the
// server may write them to any caller (sayableError): every writer of the
// service's errors, writeErr and the UI's, reads err through it or, for an
// authenticated caller, through statusOf and that caller's knower.
func (s *Server) asAPIError(err error) *apiError { return sayableError(s.statusOf(err), s.publicName) }

// statusOf is the status and message of err before the server chooses what
// of it to say: store errors map to 404, 409 and 400; an apiError keeps its
// status; anything else is a 500 whose message does not leak internals.
func (s *Server) statusOf(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, store.ErrNotFound):
		ae = &apiError{status: http.StatusNotFound, message: err.Error()}
	case errors.Is(err, store.ErrConflict):
		ae = &apiError{status: http.StatusConflict, message: err.Error()}
	case errors.Is(err, store.ErrInvalid):
		ae = &apiError{status: http.StatusBadRequest, message: err.Error()}
	default:
		ae = &apiError{status: http.StatusInternalServerError, message: "internal error"}
	}
	return ae
}

// decodeBody reads a JSON object from r into v through the 1 MiB limit. A
// Content-Type other than application/json is a 415. Malformed JSON, wrong
// types, trailing data, oversized bodies, bodies that are not UTF-8 and
// the members the module's one strict JSON rule refuses (internal/strictjson:
// given twice, or differing only in case, or naming a field in another
// case; any member of no field in a closed object) are 400s whose message
// says what is wrong, with details naming the member or value at fault.
// Unknown members are otherwise ignored. UTF-8 is checked first, to name
// the first bad byte.
func decodeBody(r *http.Request, v any) error {
	if err := checkJSONContentType(r); err != nil {
		return err
	}
	br := getBodyReader(r.Body)
	defer br.release()
	body, err := br.read()
	if err != nil {
		return errReadBody()
	}
	return decodeBytes(body, v)
}

// errReadBody is the 400 for a body that could not be read.
func errReadBody() error { return errf(http.StatusBadRequest, "cannot read request body") }

// decodeBytes is decodeBody's reading of a body already read (at most one
// byte more than maxBody: a longer one is the 400 of the limit).
func decodeBytes(body []byte, v any) error {
	if len(body) > maxBody {
		return errf(http.StatusBadRequest, "request body exceeds the 1 MiB limit")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errf(http.StatusBadRequest, "request body is empty; a JSON object is required")
	}
	if at, ok := invalidUTF8(body); ok {
		return errf(http.StatusBadRequest, "request body is not valid UTF-8 (byte %d); JSON text must be (RFC 8259, section 8.1)", at)
	}
	if fb, ok := v.(fastBody); ok && fb.decodeFast(body) {
		return nil
	}
	if err := strictjson.Unmarshal(body, v); err != nil {
		var me *strictjson.MemberError
		var te *strictjson.TypeError
		switch {
		case errors.As(err, &me):
			return badField(me.Field(), "%s", said(me.Problem()))
		case errors.As(err, &te) && te.Path != "":
			return typeError(te.Path, te.Want)
		}
		return errf(http.StatusBadRequest, "malformed JSON body: %s", said(err.Error()))
	}
	return nil
}

// bodyReader reads a request body into a buffer that is used again for
// another request's: the body is only read (strictjson.Unmarshal copies
// out every string it keeps), never kept. io.ReadAll
// allocated at least 512 bytes per request and grew from there, the largest
// allocation of a decision.
type bodyReader struct {
	buf bytes.Buffer
	lim io.LimitedReader
}

// maxPooledBody is the largest buffer that goes back to the pool: the rare
// large body (up to maxBody) does not keep its megabyte alive.
const maxPooledBody = 64 << 10

var bodyReaders = sync.Pool{New: func() any { return new(bodyReader) }}

// getBodyReader returns an empty bodyReader of body; release it when done
// with what read returned.
func getBodyReader(body io.Reader) *bodyReader {
	br := bodyReaders.Get().(*bodyReader)
	br.lim = io.LimitedReader{R: body, N: maxBody + 1}
	return br
}

// read reads the body, up to one byte more than maxBody, and returns what
// it read, valid until release.
func (br *bodyReader) read() ([]byte, error) {
	_, err := br.buf.ReadFrom(&br.lim)
	return br.buf.Bytes(), err
}

// release returns br to the pool; what read returned is no longer valid.
func (br *bodyReader) release() {
	br.lim = io.LimitedReader{}
	if br.buf.Cap() > maxPooledBody {
		return
	}
	br.buf.Reset()
	bodyReaders.Put(br)
}

// typeError is the 400 for a member of the wrong JSON type; want is the Go
// type it decodes into.
func typeError(field string, want reflect.Type) error {
	if k := jsonType(want.Kind().String()); k != "object" {
		return badField(field, "must be of type %s", said(k))
	}
	return badField(field, "must be a JSON object")
}

// checkJSONContentType answers 415 unless the request says its body is
// application/json (parameters aside; a charset must be UTF-8), once: a
// request that names two types has no one type its body is in.
func checkJSONContentType(r *http.Request) error {
	cts := r.Header["Content-Type"] // canonical (headerValue)
	if len(cts) > 1 {
		return errf(http.StatusUnsupportedMediaType, "the request names more than one Content-Type; send exactly one, application/json")
	}
	ct := ""
	if len(cts) == 1 {
		ct = cts[0]
	}
	if ct == "application/json" { // what clients send; ParseMediaType allocates
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || ascii.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	if ct == "" {
		return errf(http.StatusUnsupportedMediaType, "the request body must be application/json; the request has no Content-Type")
	}
	return errf(http.StatusUnsupportedMediaType, "the request body must be application/json, not %q", ct)
}

// jsonType names a Go kind the way a JSON user would.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	default:
		return "number"
	}
}

// page is a parsed offset/count pair, plus sorting where it applies.
type page struct {
	Offset    int    `json:"offset"`
	Count     int    `json:"count"`
	SortBy    string `json:"sortBy,omitempty"`
	SortOrder string `json:"sortOrder,omitempty"`
}

// parsePage reads offset and count from the query: offset defaults to 0,
// count to def; a negative offset, a count below 1 or a non-integer is a
// 400; a count above max is clamped to max.
func parsePage(r *http.Request, def, max int) (page, error) {
	p := page{Offset: 0, Count: def}
	q := r.URL.Query()
	if s, ok := queryParam(q, "offset"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return p, badField("offset", "must be an integer of at least 0")
		}
		p.Offset = n
	}
	if s, ok := queryParam(q, "count"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return p, badField("count", "must be an integer of at least 1")
		}
		p.Count = n
	}
	if p.Count > max {
		p.Count = max
	}
	return p, nil
}

// listBody is the service's paginated list shape.
type listBody[T any] struct {
	MetaData struct {
		CurrentPagination page `json:"currentPagination"`
		TotalRows         int  `json:"totalRows"`
	} `json:"metaData"`
	Results []T `json:"results"`
}

// queryParam returns the value of a query parameter and whether it is
// present: an empty value (?offset=) is present, and is not taken as the
// parameter's default.
func queryParam(q url.Values, name string) (string, bool) {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// invalidUTF8 returns the offset of the first byte of data that is not
// part of valid UTF-8, and whether there is one.
func invalidUTF8(data []byte) (int, bool) {
	if utf8.Valid(data) {
		return 0, false
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i, true
		}
		i += n
	}
	return 0, false // not reached: utf8.Valid was false
}

// headerValue is h.Get(key) for a canonical key (textproto
// CanonicalMIMEHeaderKey's form, such as "Content-Type"): it looks the key
// up as it is, where Get canonicalizes it on every call. A request's
// header holds canonical keys only: net/http's server canonicalizes what
// it reads, and Header.Set and Add what a caller sets
// (TestHeaderValueIsGet).
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
