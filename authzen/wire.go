package authzen

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/orgauthz/orgauthz/internal/strictjson"
	"github.com/orgauthz/orgauthz/internal/verbatim"
)

// The request side: encoding/json writes map keys sorted, so equal requests
// encode to equal bytes, which serve as cache and coalescing keys.

type wireEntity struct {
	Type       string         `json:"type,omitempty"`
	ID         string         `json:"id,omitempty"`
	Name       string         `json:"name,omitempty"`
	Properties map[string]any `json:"properties,omitempty"`
}

type wireRequest struct {
	Subject  *wireEntity    `json:"subject,omitempty"`
	Action   *wireEntity    `json:"action,omitempty"`
	Resource *wireEntity    `json:"resource,omitempty"`
	Context  map[string]any `json:"context,omitempty"`
}

type wireOptions struct {
	Semantic string `json:"evaluations_semantic"`
}

type wireBatch struct {
	wireRequest
	Options     *wireOptions  `json:"options,omitempty"`
	Evaluations []wireRequest `json:"evaluations"`
}

func wireOf(r Request) wireRequest {
	var w wireRequest
	if r.Subject.present() {
		w.Subject = &wireEntity{Type: r.Subject.Type, ID: r.Subject.ID, Properties: r.Subject.Properties}
	}
	if r.Action.present() {
		w.Action = &wireEntity{Name: r.Action.Name, Properties: r.Action.Properties}
	}
	if r.Resource.present() {
		w.Resource = &wireEntity{Type: r.Resource.Type, ID: r.Resource.ID, Properties: r.Resource.Properties}
	}
	w.Context = r.Context // an empty map is left out, as omitempty does
	return w
}

// present reports whether a part of a request goes on the wire; merge asks
// the same question, so a cache key is made of what the PDP evaluates.
// Empty properties are left out of the JSON, so they do not count.
func (s Subject) present() bool  { return s.Type != "" || s.ID != "" || len(s.Properties) > 0 }
func (a Action) present() bool   { return a.Name != "" || len(a.Properties) > 0 }
func (r Resource) present() bool { return r.Type != "" || r.ID != "" || len(r.Properties) > 0 }

// question is what the client sends: a request, a batch or a search. Its
// check finds a string that JSON would change on the way (internal/verbatim).
type question interface {
	check() error
}

// encode returns the JSON of q, which is every question's one way onto
// the wire and into cache and coalescing keys. It refuses, with
// ErrInvalidArgument, a question holding a string that is not valid UTF-8
// (naming the field; encoding/json would send another string) and a
// property or context value that JSON cannot carry (a channel, a cycle,
// NaN). The JSON is read again after encoding, so that no value (a
// json.Marshaler's, a json.RawMessage) goes out other than as given.
func encode(q question) ([]byte, error) {
	if err := q.check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(q)
	if err != nil {
		return nil, fmt.Errorf("%w: a property or context value cannot be encoded as JSON", ErrInvalidArgument)
	}
	if !verbatim.JSON(b) {
		return nil, fmt.Errorf("%w: a property or context value %s", ErrInvalidArgument, verbatim.Problem)
	}
	return b, nil
}

// notText is the error for the field named by field (and what, within a
// value, held the string).
func notText(field, what string) error {
	if what != "" {
		field += " (" + what + ")"
	}
	return fmt.Errorf("%w: %s %s", ErrInvalidArgument, field, verbatim.Problem)
}

func (w wireRequest) check() error { return w.checkAt("") }

// checkAt is check with the fields' names preceded by prefix.
func (w wireRequest) checkAt(prefix string) error {
	for _, e := range [...]struct {
		name string
		e    *wireEntity
	}{{"subject", w.Subject}, {"action", w.Action}, {"resource", w.Resource}} {
		if e.e == nil {
			continue
		}
		for _, f := range [...]struct{ name, s string }{{"type", e.e.Type}, {"id", e.e.ID}, {"name", e.e.Name}} {
			if !utf8.ValidString(f.s) {
				return notText(prefix+e.name+"."+f.name, "")
			}
		}
		if what := verbatim.Walk(e.e.Properties); what != "" {
			return notText(prefix+e.name+".properties", what)
		}
	}
	if what := verbatim.Walk(w.Context); what != "" {
		return notText(prefix+"context", what)
	}
	return nil
}

func (b wireBatch) check() error {
	if err := b.wireRequest.check(); err != nil {
		return err
	}
	for i, e := range b.Evaluations {
		if err := e.checkAt("evaluations[" + strconv.Itoa(i) + "]."); err != nil {
			return err
		}
	}
	return nil
}

func (s wireSearch) check() error {
	if err := s.wireRequest.check(); err != nil {
		return err
	}
	if s.Page != nil && !utf8.ValidString(s.Page.Token) {
		// The PDP's own token, read as valid UTF-8: never the caller's.
		return notText("page.token", "")
	}
	return nil
}

// The answer side, read by the module's one strict rule (internal/strictjson):
// a member named twice in any object, two members whose names differ only
// in case, a member the client reads named in another case, a value of the
// wrong type (a decision that is not exactly true or false), trailing data
// are errors.

// item is what the PDP said about one evaluation.
type item struct {
	allowed bool
	context map[string]any
	// err is set when the item itself was unusable (no decision) or
	// reported an error; the item is then denied with it as Cause.
	err error
}

// readers keeps strict readers between answers.
var readers = sync.Pool{New: func() any { return strictjson.New() }}

var (
	evaluationMembers  = []string{"decision", "context"}
	evaluationsMembers = []string{"evaluations"}
)

// decodeEvaluation reads an Access Evaluation answer.
func decodeEvaluation(body []byte) (item, error) {
	r := readers.Get().(*strictjson.Reader)
	defer func() { r.Release(); readers.Put(r) }()
	r.Reset(body)
	it, err := readItem(r)
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return item{}, pdp.Malformed("the body is not a valid evaluation answer: %s", strictjson.Problem(err, errTooManyItems, errBadContext))
	}
	return it, nil
}

// The decoder's own errors, with fixed texts.
var (
	errTooManyItems = errors.New("the answer has more evaluations than were asked")
	errBadContext   = errors.New("a context names a member twice or is not valid UTF-8")
)

// decodeEvaluations reads an Access Evaluations answer for n items; it
// refuses more than n (memory follows what was asked, not the body).
func decodeEvaluations(body []byte, n int) ([]item, error) {
	r := readers.Get().(*strictjson.Reader)
	defer func() { r.Release(); readers.Put(r) }()
	r.Reset(body)
	var items []item
	saw := false
	err := r.Object()
	for _, ok := r.Next(evaluationsMembers, &err); ok; _, ok = r.Next(evaluationsMembers, &err) {
		saw = true
		items = make([]item, 0, n)
		err = r.Array()
		for r.More(&err) {
			if len(items) == n {
				err = errTooManyItems
				break
			}
			var it item
			it, err = readItem(r)
			items = append(items, it)
		}
	}
	if err == nil {
		err = r.End()
	}
	if err == nil && !saw {
		err = strictjson.ErrMissingMember
	}
	if err != nil {
		return nil, pdp.Malformed("the body is not a valid evaluations answer: %s", strictjson.Problem(err, errTooManyItems, errBadContext))
	}
	return items, nil
}

// readItem reads one evaluation object: a "decision" that is a JSON
// boolean, and an optional "context" object. An item without a decision,
// or whose context carries an "error" member, is kept with err set; a
// structural fault is returned.
func readItem(r *strictjson.Reader) (item, error) {
	var it item
	sawDecision := false
	member := func(i int) error {
		if i == 0 {
			sawDecision = true
			var err error
			it.allowed, err = r.Boolean()
			return err
		}
		raw, err := r.Value()
		if err != nil {
			return err
		}
		if raw.Kind() == 'n' {
			return nil
		}
		if raw.Kind() != '{' {
			return fmt.Errorf("%w: the context is not an object", strictjson.ErrWrongType)
		}
		if len(raw) > maxContextBytes {
			// Decoded into maps, JSON costs tens of times its size: a
			// context this large is not read, and its item grants nothing.
			it.err = pdp.Malformed("an evaluation's context exceeds %d bytes", maxContextBytes)
			return nil
		}
		// Names are data here: only a name given twice is refused.
		if err := strictjson.Unmarshal(raw, &it.context); err != nil {
			return errBadContext
		}
		return nil
	}
	err := r.Object()
	for i, ok := r.Next(evaluationMembers, &err); ok; i, ok = r.Next(evaluationMembers, &err) {
		err = member(i)
	}
	switch {
	case err != nil:
		return it, err
	case it.err != nil:
		it.allowed = false
	case !sawDecision:
		it.allowed, it.err = false, pdp.Malformed("an evaluation has no decision")
	case reportsError(it.context):
		it.allowed, it.err = false, ErrEvaluationFailed
	}
	return it, nil
}

// maxContextBytes bounds the JSON of one evaluation's context.
const maxContextBytes = 16 << 10

// reportsError reports whether an evaluation's context carries an error: a
// member named "error" in any case, whatever its value (null included), so
// that no reader that matches names loosely sees an error where this one
// sees none.
func reportsError(context map[string]any) bool {
	for k := range context {
		if strings.EqualFold(k, "error") {
			return true
		}
	}
	return false
}
