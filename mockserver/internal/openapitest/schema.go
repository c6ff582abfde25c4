package openapitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The JSON Schema 2020-12 validator the Checker uses: exactly the keywords
// mockserver/openapi.json uses, nothing else. A schema holding any other
// keyword, or a keyword whose value has the wrong shape, fails the load, so
// an edit to the document cannot leave part of it silently unchecked: a new
// keyword is implemented here first.
//
// Assertions: type, enum, const, required, properties, additionalProperties
// (false or a schema), items, minimum, maximum, minLength, minItems,
// maxItems, pattern, anyOf, if/then, $ref (local: "#/..."), and format
// "date-time", which is asserted (RFC 3339 section 5.6, as the server parses
// its from and to parameters; any other format fails the load). Annotations,
// which assert nothing: description, default, title, examples, $comment.
//
// A failure names the instance's JSON pointer, the keyword, and where the
// keyword is in the document.

// schema is a compiled schema: the checks of its keywords.
type schema struct {
	checks []check
}

// check validates the instance v, found at the JSON pointer at, adding what
// fails to errs.
type check func(v any, at string, errs *[]error)

// validate checks a whole instance: nil, or every failure joined.
func (s *schema) validate(v any) error {
	return errors.Join(s.failures(v, "")...)
}

func (s *schema) check(v any, at string, errs *[]error) {
	for _, c := range s.checks {
		c(v, at, errs)
	}
}

func (s *schema) failures(v any, at string) []error {
	var errs []error
	s.check(v, at, &errs)
	return errs
}

// compiler compiles the document's schemas once each, by JSON pointer, so
// that a $ref cycle ends at the schema under construction.
type compiler struct {
	doc   *document
	built map[string]*schema
}

func (c *compiler) compile(ptr string) (*schema, error) {
	if s, ok := c.built[ptr]; ok {
		return s, nil
	}
	s := &schema{}
	c.built[ptr] = s
	switch v := c.doc.at(ptr).(type) {
	case bool:
		if !v {
			s.checks = []check{func(_ any, at string, errs *[]error) {
				*errs = append(*errs, fmt.Errorf("at %q: the schema %s is false: no value is allowed", at, ptr))
			}}
		}
		return s, nil
	case map[string]any:
		for _, kw := range slices.Sorted(maps.Keys(v)) {
			chk, err := c.keyword(kw, v, ptr)
			if err != nil {
				return nil, fmt.Errorf("schema %s: keyword %q: %w", ptr, kw, err)
			}
			if chk != nil {
				s.checks = append(s.checks, chk)
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("%s is not a schema", ptr)
}

// compileAll compiles the schemas at ptr+"/"+name for each name.
func (c *compiler) compileAll(ptr string, names []string) ([]*schema, error) {
	out := make([]*schema, len(names))
	for i, name := range names {
		var err error
		if out[i], err = c.compile(ptr + "/" + escapeToken(name)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// on returns a check that applies f to instances of JSON type T and lets
// any other pass, as every keyword but type, enum and const does.
func on[T any](f func(v T, at string, errs *[]error)) check {
	return func(v any, at string, errs *[]error) {
		if t, ok := v.(T); ok {
			f(t, at, errs)
		}
	}
}

func fail(errs *[]error, at, ptr, kw, format string, args ...any) {
	*errs = append(*errs, fmt.Errorf("at %q: %s: %s (schema %s/%s)", at, kw, fmt.Sprintf(format, args...), ptr, kw))
}

// nested is the failure of an applicator (anyOf, then) with the failures
// under it, indented.
func nested(at, ptr, what string, under []error) error {
	return fmt.Errorf("at %q: %s (schema %s):\n\t%s", at, what, ptr,
		strings.ReplaceAll(errors.Join(under...).Error(), "\n", "\n\t"))
}

var typeNames = []string{"null", "boolean", "object", "array", "number", "integer", "string"}

// keyword compiles one keyword of the schema obj at ptr: a nil check for an
// annotation, an error for a keyword this validator does not implement.
func (c *compiler) keyword(kw string, obj map[string]any, ptr string) (check, error) {
	val, sub := obj[kw], ptr+"/"+escapeToken(kw)
	switch kw {
	case "description", "default", "title", "examples", "$comment":
		return nil, nil
	case "then": // read by if
		if _, ok := obj["if"]; !ok {
			return nil, errors.New("then without if asserts nothing")
		}
		return nil, nil
	case "type":
		types, ok := stringList(val)
		if t, isStr := val.(string); isStr {
			types, ok = []string{t}, true
		}
		if !ok || len(types) == 0 || slices.ContainsFunc(types, func(t string) bool { return !slices.Contains(typeNames, t) }) {
			return nil, fmt.Errorf("not a type or list of types: %v", val)
		}
		return func(v any, at string, errs *[]error) {
			if !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
				fail(errs, at, ptr, kw, "%s is not %s", typeOf(v), strings.Join(types, " or "))
			}
		}, nil
	case "enum", "const":
		values, ok := val.([]any)
		word := "one of "
		if kw == "const" {
			values, ok, word = []any{val}, true, ""
		}
		if !ok || len(values) == 0 {
			return nil, errors.New("not a non-empty list")
		}
		return func(v any, at string, errs *[]error) {
			if !slices.ContainsFunc(values, func(e any) bool { return equal(v, e) }) {
				fail(errs, at, ptr, kw, "%s is not %s%s", show(v), word, show(val))
			}
		}, nil
	case "$ref":
		ref, _ := val.(string)
		if !strings.HasPrefix(ref, "#/") {
			return nil, fmt.Errorf("only local $refs (#/...) are read, not %q", ref)
		}
		target, err := c.compile(ref[1:])
		return target.check, err
	case "properties":
		props, ok := val.(map[string]any)
		if !ok {
			return nil, errors.New("not an object")
		}
		names := slices.Sorted(maps.Keys(props))
		subs, err := c.compileAll(sub, names)
		return on(func(o map[string]any, at string, errs *[]error) {
			for i, name := range names {
				if m, ok := o[name]; ok {
					subs[i].check(m, at+"/"+escapeToken(name), errs)
				}
			}
		}), err
	case "required":
		names, ok := stringList(val)
		if !ok {
			return nil, errors.New("not a list of names")
		}
		return on(func(o map[string]any, at string, errs *[]error) {
			for _, name := range names {
				if _, ok := o[name]; !ok {
					fail(errs, at, ptr, kw, "member %q is missing", name)
				}
			}
		}), nil
	case "additionalProperties":
		declared, _ := obj["properties"].(map[string]any)
		s, err := c.compile(sub)
		return on(func(o map[string]any, at string, errs *[]error) {
			for _, name := range slices.Sorted(maps.Keys(o)) {
				if _, ok := declared[name]; ok {
					continue
				}
				if val == false {
					fail(errs, at, ptr, kw, "member %q is not allowed", name)
				} else {
					s.check(o[name], at+"/"+escapeToken(name), errs)
				}
			}
		}), err
	case "items":
		s, err := c.compile(sub)
		return on(func(list []any, at string, errs *[]error) {
			for i, item := range list {
				s.check(item, at+"/"+strconv.Itoa(i), errs)
			}
		}), err
	case "minimum", "maximum":
		bound := number(val)
		if bound == nil {
			return nil, errors.New("not a number")
		}
		sign, word := -1, "below" // the comparison that fails
		if kw == "maximum" {
			sign, word = 1, "above"
		}
		return on(func(n json.Number, at string, errs *[]error) {
			if x := number(n); x != nil && x.Cmp(bound) == sign {
				fail(errs, at, ptr, kw, "%s is %s %s", n, word, val)
			}
		}), nil
	case "minLength", "minItems", "maxItems":
		limit, err := strconv.Atoi(fmt.Sprint(val))
		if _, isNum := val.(json.Number); !isNum || err != nil || limit < 0 {
			return nil, errors.New("not a non-negative integer")
		}
		failLength := func(n int, at string, errs *[]error) {
			if kw == "maxItems" && n > limit {
				fail(errs, at, ptr, kw, "%d items, want at most %d", n, limit)
			} else if kw != "maxItems" && n < limit {
				fail(errs, at, ptr, kw, "length %d, want at least %d", n, limit)
			}
		}
		if kw == "minLength" {
			return on(func(s string, at string, errs *[]error) { failLength(utf8.RuneCountInString(s), at, errs) }), nil
		}
		return on(func(list []any, at string, errs *[]error) { failLength(len(list), at, errs) }), nil
	case "pattern":
		src, ok := val.(string)
		if !ok {
			return nil, fmt.Errorf("not a string: %s", show(val))
		}
		re, err := regexp.Compile(src)
		return on(func(s string, at string, errs *[]error) {
			if !re.MatchString(s) {
				fail(errs, at, ptr, kw, "%q does not match %s", s, src)
			}
		}), err
	case "format":
		if val != "date-time" {
			return nil, fmt.Errorf("format %v is not checked; only date-time is", val)
		}
		return on(func(s string, at string, errs *[]error) {
			if !isDateTime(s) {
				fail(errs, at, ptr, kw, "%q is not an RFC 3339 date-time", s)
			}
		}), nil
	case "anyOf":
		list, ok := val.([]any)
		if !ok || len(list) == 0 {
			return nil, errors.New("not a non-empty list of schemas")
		}
		names := make([]string, len(list))
		for i := range list {
			names[i] = strconv.Itoa(i)
		}
		branches, err := c.compileAll(sub, names)
		return func(v any, at string, errs *[]error) {
			var all []error
			for _, b := range branches {
				bErrs := b.failures(v, at)
				if len(bErrs) == 0 {
					return
				}
				all = append(all, bErrs...)
			}
			*errs = append(*errs, nested(at, sub, "anyOf: no branch matches", all))
		}, err
	case "if":
		cond, err := c.compile(sub)
		then := &schema{}
		if _, ok := obj["then"]; ok && err == nil {
			then, err = c.compile(ptr + "/then")
		}
		return func(v any, at string, errs *[]error) {
			if len(cond.failures(v, at)) > 0 {
				return
			}
			if thenErrs := then.failures(v, at); len(thenErrs) > 0 {
				*errs = append(*errs, nested(at, ptr+"/then", "then: the value matches if, but", thenErrs))
			}
		}, err
	}
	return nil, errors.New("not implemented by this validator (schema.go)")
}

// stringList reads a JSON list of strings.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	out := make([]string, len(list))
	for i, x := range list {
		if out[i], ok = x.(string); !ok {
			return nil, false
		}
	}
	return out, ok
}

// number reads a JSON number exactly; nil for any other value, and for a
// number with an exponent beyond 10^±1e6 (math/big's limit).
func number(v any) *big.Rat {
	if n, ok := v.(json.Number); ok {
		if r, ok := new(big.Rat).SetString(string(n)); ok {
			return r
		}
	}
	return nil
}

func hasType(v any, t string) bool {
	switch t {
	case "integer":
		n := number(v)
		return n != nil && n.IsInt()
	case "number":
		return number(v) != nil
	}
	return typeOf(v) == t
}

// typeOf names an instance's JSON type.
func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case json.Number:
		return "number"
	case string:
		return "string"
	}
	return fmt.Sprintf("%T", v)
}

// equal is JSON equality: numbers by value, objects and arrays member by
// member.
func equal(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		x, y := number(a), number(b)
		return x != nil && y != nil && x.Cmp(y) == 0
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, equal)
	case map[string]any:
		b, ok := b.(map[string]any)
		return ok && maps.EqualFunc(a, b, equal)
	}
	return a == b // string, bool or nil: b of another type is not equal
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// dateTime is RFC 3339's date-time grammar; isDateTime checks the ranges
// (month, day of month, hour...) with time.Parse, which takes only upper
// case T and Z. A leap second (:60) is refused, as the server refuses it.
var dateTime = regexp.MustCompile(`^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$`)

func isDateTime(s string) bool {
	if !dateTime.MatchString(s) {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	return err == nil
}
