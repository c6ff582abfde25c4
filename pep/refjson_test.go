package pep_test

// An independent, strict reference reader of the gateway's answers, for the
// differential fuzz targets. It shares no code with the client: encoding/json
// checks the text (RFC 8259) and hands over its tokens, from which the
// reader keeps every member of every object, in order, duplicates
// included; invalid UTF-8 is refused first (encoding/json alone would
// replace it), and an escaped lone surrogate reads as U+FFFD. The rules of
// the contract are then applied to that tree.

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// refValue is a parsed JSON value.
type refValue struct {
	kind    byte // '{', '[', '"', 'n' (number), 't', 'f', '0' (null)
	str     string
	members []refMember // objects, in order, duplicates kept
	items   []refValue  // arrays
}

type refMember struct {
	name  string
	value refValue
}

var errRef = errors.New("reference: rejected")

// refParse parses one JSON text: a value with optional white space around
// it, strictly by RFC 8259, rejecting invalid UTF-8.
func refParse(data []byte) (refValue, error) {
	if !utf8.Valid(data) || !json.Valid(data) {
		return refValue{}, errRef
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return refRead(d)
}

// refRead reads the next value of d, which holds valid JSON.
func refRead(d *json.Decoder) (refValue, error) {
	tok, err := d.Token()
	if err != nil {
		return refValue{}, err
	}
	switch t := tok.(type) {
	case json.Delim: // '{' or '['
		v := refValue{kind: byte(t)}
		for d.More() {
			var name json.Token
			if t == '{' {
				if name, err = d.Token(); err != nil {
					return v, err
				}
			}
			item, err := refRead(d)
			if err != nil {
				return v, err
			}
			if t == '{' {
				v.members = append(v.members, refMember{name.(string), item})
			} else {
				v.items = append(v.items, item)
			}
		}
		_, err := d.Token() // the closing delimiter
		return v, err
	case string:
		return refValue{kind: '"', str: t}, nil
	case bool:
		return refValue{kind: map[bool]byte{true: 't', false: 'f'}[t]}, nil
	case json.Number:
		return refValue{kind: 'n'}, nil
	}
	return refValue{kind: '0'}, nil // null
}

// refFields returns the values of the members of object o named exactly
// one of names, or false when o is not an object, names one of them twice,
// has a member whose name holds a letter some reader reads as ASCII
// (readAsASCII: readers disagree on the case of "ı", "ß" or "ﬆ", and the
// contract's names are ASCII) or one whose name equals one of names only
// when (ASCII) case is ignored.
func refFields(o refValue, names ...string) (map[string]refValue, bool) {
	if o.kind != '{' {
		return nil, false
	}
	got := map[string]refValue{}
	for _, m := range o.members {
		if strings.ContainsFunc(m.name, readAsASCII) {
			return nil, false
		}
		for _, n := range names {
			switch {
			case m.name == n:
				if _, dup := got[n]; dup {
					return nil, false
				}
				got[n] = m.value
			case strings.EqualFold(m.name, n):
				return nil, false
			}
		}
	}
	return got, true
}

// refPair is a resource-scope pair as the reference sees it.
type refPair struct{ resource, scope string }

// refAuthorize reads an authorize answer by the contract: an object with a
// status of GRANT, DENY or ERROR and an array of permissions, each an
// object with the strings resource, scope and a status of those three. It
// returns every entry, in order, or false when the answer is unusable.
func refAuthorize(body []byte) ([]refPair, []string, bool) {
	root, err := refParse(body)
	if err != nil {
		return nil, nil, false
	}
	top, ok := refFields(root, "status", "permissions")
	valid := func(v refValue, present bool) bool {
		return present && v.kind == '"' && (v.str == "GRANT" || v.str == "DENY" || v.str == "ERROR")
	}
	status, hasStatus := top["status"]
	perms, hasPerms := top["permissions"]
	if !ok || !valid(status, hasStatus) || !hasPerms || perms.kind != '[' {
		return nil, nil, false
	}
	var pairs []refPair
	var statuses []string
	for _, item := range perms.items {
		f, ok := refFields(item, "resource", "scope", "status")
		r, hasR := f["resource"]
		s, hasS := f["scope"]
		st, hasSt := f["status"]
		if !ok || !hasR || r.kind != '"' || !hasS || s.kind != '"' || !valid(st, hasSt) {
			return nil, nil, false
		}
		pairs = append(pairs, refPair{r.str, s.str})
		statuses = append(statuses, st.str)
	}
	return pairs, statuses, true
}

// refDecide is the reference's rule 1: the status of the one entry that
// names exactly p, or "" (not decided, so DENY) when there are none or
// several.
func refDecide(pairs []refPair, statuses []string, p refPair) string {
	found := ""
	n := 0
	for i, q := range pairs {
		if q == p {
			found = statuses[i]
			n++
		}
	}
	if n != 1 {
		return ""
	}
	return found
}

// refTenant is a tenant as the reference reads it.
type refTenant struct {
	id, name    string
	departments [][2]string // id, name
}

// refOrganizations reads a get-organizations answer by the contract: status
// true, an organization with a non-empty userId and an array of tenants,
// each with a non-empty tenantId, an optional string tenantName and an
// optional array of departments, each with a non-empty departmentId and an
// optional string departmentName.
func refOrganizations(body []byte) (string, []refTenant, bool) {
	root, err := refParse(body)
	if err != nil {
		return "", nil, false
	}
	top, ok := refFields(root, "status", "organization")
	status, hasStatus := top["status"]
	org, hasOrg := top["organization"]
	if !ok || !hasStatus || status.kind != 't' || !hasOrg {
		return "", nil, false
	}
	o, ok := refFields(org, "userId", "tenants")
	user, hasUser := o["userId"]
	tenants, hasTenants := o["tenants"]
	if !ok || !hasUser || user.kind != '"' || user.str == "" || !hasTenants || tenants.kind != '[' {
		return "", nil, false
	}
	optionalString := func(v refValue, present bool) (string, bool) {
		if !present {
			return "", true
		}
		return v.str, v.kind == '"'
	}
	var out []refTenant
	for _, item := range tenants.items {
		f, ok := refFields(item, "tenantId", "tenantName", "departments")
		id, hasID := f["tenantId"]
		if !ok || !hasID || id.kind != '"' || id.str == "" {
			return "", nil, false
		}
		v, present := f["tenantName"]
		name, ok := optionalString(v, present)
		if !ok {
			return "", nil, false
		}
		t := refTenant{id: id.str, name: name}
		if deps, present := f["departments"]; present {
			if deps.kind != '[' {
				return "", nil, false
			}
			for _, d := range deps.items {
				df, ok := refFields(d, "departmentId", "departmentName")
				did, hasDID := df["departmentId"]
				if !ok || !hasDID || did.kind != '"' || did.str == "" {
					return "", nil, false
				}
				v, present := df["departmentName"]
				dname, ok := optionalString(v, present)
				if !ok {
					return "", nil, false
				}
				t.departments = append(t.departments, [2]string{did.str, dname})
			}
		}
		out = append(out, t)
	}
	return user.str, out, true
}

// readAsASCII reports whether a reader may read r, a letter beyond ASCII,
// as ASCII letters: by its simple case mappings or folding orbit in the
// unicode tables, by full case folding (ß, ẞ, ﬀ to ﬆ), or as a fullwidth
// form of ASCII.
func readAsASCII(r rune) bool {
	mapped := []rune{unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r)}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		mapped = append(mapped, f)
	}
	return r > unicode.MaxASCII && (slices.ContainsFunc(mapped, func(m rune) bool { return m <= unicode.MaxASCII }) ||
		strings.ContainsRune("ßẞﬀﬁﬂﬃﬄﬅﬆ", r) || r >= 0xFF01 && r <= 0xFF5E)
}
