package openapitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The parts of an OpenAPI 3.1 document the Checker reads: paths (with
// whole-segment templates), operations, parameters in path, query and
// header (style simple or form, one value each), request bodies (JSON or
// urlencoded forms), responses by code, range ("4XX") or default, with
// headers and content. Every schema (those under components/schemas and
// those in place) is compiled when the document loads (schema.go).

var (
	errPathNotFound     = errors.New("no path of the document matches")
	errMethodNotAllowed = errors.New("the path has no operation for the method")
)

type document struct {
	raw       map[string]any
	compiler  *compiler
	paths     []*pathItem
	errSchema *schema
	// oauthErrSchema is the OAuth endpoints' error body (RFC 6749), when
	// the document has one.
	oauthErrSchema *schema
}

type pathItem struct {
	template string
	segs     []string // a segment "{x}" is the variable x
	vars     int
	ops      map[string]*operation
}

type operation struct {
	name     string // "GET /path" in messages
	params   []*param
	body     *requestBody
	response map[string]*response // "200", "4XX", "default"
}

type param struct {
	name, in string
	required bool
	typ      string // the schema's type, for reading the string form
	schema   *schema
}

type requestBody struct {
	required bool
	content  map[string]*media
}

type media struct {
	schema *schema           // nil: no schema to check
	props  map[string]string // a form's member types, by name
}

type response struct {
	headers []*param
	content map[string]*media
}

func load(raw []byte) (*document, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("load: the document is not a JSON object")
	}
	if ver, _ := root["openapi"].(string); !strings.HasPrefix(ver, "3.1.") {
		return nil, fmt.Errorf("the document is OpenAPI %q, not 3.1", ver)
	}
	d := &document{raw: root}
	d.compiler = &compiler{doc: d, built: map[string]*schema{}}
	components, _ := root["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	if _, ok := schemas["Error"]; !ok {
		return nil, errors.New("the document has no Error schema")
	}
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		s, err := d.schemaAt("/components/schemas/" + escapeToken(name))
		if err != nil {
			return nil, fmt.Errorf("invalid document: %w", err)
		}
		switch name {
		case "Error":
			d.errSchema = s
		case "OAuthError":
			d.oauthErrSchema = s
		}
	}
	paths, _ := root["paths"].(map[string]any)
	if len(paths) == 0 {
		return nil, errors.New("invalid document: no paths")
	}
	for _, tmpl := range slices.Sorted(maps.Keys(paths)) {
		item, err := d.pathItem(tmpl, paths[tmpl])
		if err != nil {
			return nil, fmt.Errorf("invalid document: %s: %w", tmpl, err)
		}
		d.paths = append(d.paths, item)
	}
	// The most concrete template first: a literal segment wins over a
	// variable, as it does in Go's ServeMux.
	slices.SortStableFunc(d.paths, func(a, b *pathItem) int { return a.vars - b.vars })
	return d, nil
}

func (d *document) pathItem(tmpl string, v any) (*pathItem, error) {
	if !strings.HasPrefix(tmpl, "/") {
		return nil, errors.New("a path must start with /")
	}
	obj, ptr, err := d.resolve(v, "/paths/"+escapeToken(tmpl))
	if err != nil {
		return nil, err
	}
	item := &pathItem{template: tmpl, segs: strings.Split(tmpl[1:], "/"), ops: map[string]*operation{}}
	for _, s := range item.segs {
		if isVar(s) {
			item.vars++
		}
	}
	shared, err := d.params(obj["parameters"], ptr+"/parameters")
	if err != nil {
		return nil, err
	}
	for _, method := range []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"} {
		opv, ok := obj[method]
		if !ok {
			continue
		}
		op, err := d.operation(strings.ToUpper(method)+" "+tmpl, opv, ptr+"/"+method, shared)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		item.ops[strings.ToUpper(method)] = op
	}
	return item, nil
}

func (d *document) operation(name string, v any, ptr string, shared []*param) (*operation, error) {
	obj, ptr, err := d.resolve(v, ptr)
	if err != nil {
		return nil, err
	}
	own, err := d.params(obj["parameters"], ptr+"/parameters")
	if err != nil {
		return nil, err
	}
	op := &operation{name: name, response: map[string]*response{}}
	// An operation's parameter replaces a path item's of the same name and place.
	for _, p := range shared {
		if !slices.ContainsFunc(own, func(o *param) bool { return o.name == p.name && o.in == p.in }) {
			op.params = append(op.params, p)
		}
	}
	op.params = append(op.params, own...)
	if rb, ok := obj["requestBody"]; ok {
		bobj, bptr, err := d.resolve(rb, ptr+"/requestBody")
		if err != nil {
			return nil, err
		}
		required, _ := bobj["required"].(bool)
		content, err := d.content(bobj["content"], bptr+"/content")
		if err != nil {
			return nil, err
		}
		op.body = &requestBody{required: required, content: content}
	}
	responses, _ := obj["responses"].(map[string]any)
	if len(responses) == 0 {
		return nil, errors.New("no responses")
	}
	for code, rv := range responses {
		robj, rptr, err := d.resolve(rv, ptr+"/responses/"+escapeToken(code))
		if err != nil {
			return nil, err
		}
		r := &response{}
		if hs, ok := robj["headers"].(map[string]any); ok {
			for hname, hv := range hs {
				if strings.EqualFold(hname, "Content-Type") {
					continue // OpenAPI ignores a Content-Type header definition
				}
				h, err := d.param(hv, rptr+"/headers/"+escapeToken(hname))
				if err != nil {
					return nil, err
				}
				h.name, h.in = hname, "header"
				r.headers = append(r.headers, h)
			}
		}
		if r.content, err = d.content(robj["content"], rptr+"/content"); err != nil {
			return nil, err
		}
		op.response[strings.ToUpper(code)] = r
	}
	return op, nil
}

func (d *document) params(v any, ptr string) ([]*param, error) {
	list, _ := v.([]any)
	var out []*param
	for i, pv := range list {
		p, err := d.param(pv, ptr+"/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		if p.name == "" || (p.in != "path" && p.in != "query" && p.in != "header" && p.in != "cookie") {
			return nil, fmt.Errorf("parameter %d: name %q in %q", i, p.name, p.in)
		}
		out = append(out, p)
	}
	return out, nil
}

// param reads a parameter or a header object.
func (d *document) param(v any, ptr string) (*param, error) {
	obj, ptr, err := d.resolve(v, ptr)
	if err != nil {
		return nil, err
	}
	p := &param{}
	p.name, _ = obj["name"].(string)
	p.in, _ = obj["in"].(string)
	p.required, _ = obj["required"].(bool)
	if _, ok := obj["schema"]; ok {
		if p.schema, err = d.schemaAt(ptr + "/schema"); err != nil {
			return nil, err
		}
		p.typ = d.typeOf(obj["schema"])
	}
	return p, nil
}

func (d *document) content(v any, ptr string) (map[string]*media, error) {
	obj, _ := v.(map[string]any)
	out := map[string]*media{}
	for mt, mv := range obj {
		mobj, _ := mv.(map[string]any)
		m := &media{}
		if sv, ok := mobj["schema"]; ok {
			var err error
			if m.schema, err = d.schemaAt(ptr + "/" + escapeToken(mt) + "/schema"); err != nil {
				return nil, err
			}
			if s, _, err := d.resolve(sv, ""); err == nil {
				if props, ok := s["properties"].(map[string]any); ok {
					m.props = map[string]string{}
					for name, pv := range props {
						m.props[name] = d.typeOf(pv)
					}
				}
			}
		}
		out[mt] = m
	}
	return out, nil
}

// resolve follows a $ref (local to the document) and returns the object and
// its JSON pointer.
func (d *document) resolve(v any, ptr string) (map[string]any, string, error) {
	for range 8 {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("%s is not an object", ptr)
		}
		ref, ok := obj["$ref"].(string)
		if !ok {
			return obj, ptr, nil
		}
		if !strings.HasPrefix(ref, "#/") {
			return nil, "", fmt.Errorf("%s: only local $refs are read, not %q", ptr, ref)
		}
		ptr = ref[1:]
		if v = d.at(ptr); v == nil {
			return nil, "", fmt.Errorf("$ref %q names nothing", ref)
		}
	}
	return nil, "", fmt.Errorf("%s: $refs nested too deep", ptr)
}

// at returns the value at a JSON pointer ("/a/0/b"), nil when there is none.
func (d *document) at(ptr string) any {
	var v any = d.raw
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		switch x := v.(type) {
		case map[string]any:
			v = x[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func (d *document) schemaAt(ptr string) (*schema, error) {
	return d.compiler.compile(ptr)
}

// typeOf returns a schema's JSON type for reading a parameter's string
// form: the first type other than null, "" when none is declared.
func (d *document) typeOf(v any) string {
	obj, _, err := d.resolve(v, "")
	if err != nil {
		return ""
	}
	switch t := obj["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if s, _ := x.(string); s != "" && s != "null" {
				return s
			}
		}
	}
	return ""
}

// route finds the operation for method on an escaped request path, with the
// path's variables.
func (d *document) route(method, path string) (*operation, map[string]string, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, nil, errPathNotFound
	}
	segs := strings.Split(path[1:], "/")
	for i, s := range segs {
		if u, err := url.PathUnescape(s); err == nil {
			segs[i] = u
		}
	}
	found := false
	for _, item := range d.paths {
		vars, ok := item.match(segs)
		if !ok {
			continue
		}
		found = true
		// Go's ServeMux routes GET .../roles/create to GET .../roles/{roleId}
		// when the concrete path has only POST: a less concrete template
		// with the method serves it.
		if op := item.ops[method]; op != nil {
			return op, vars, nil
		}
	}
	if found {
		return nil, nil, errMethodNotAllowed
	}
	return nil, nil, errPathNotFound
}

func (p *pathItem) match(segs []string) (map[string]string, bool) {
	if len(segs) != len(p.segs) {
		return nil, false
	}
	vars := map[string]string{}
	for i, t := range p.segs {
		switch {
		case isVar(t):
			if segs[i] == "" {
				return nil, false
			}
			vars[t[1:len(t)-1]] = segs[i]
		case t != segs[i]:
			return nil, false
		}
	}
	return vars, true
}

func (op *operation) checkRequest(req *http.Request, vars map[string]string, body []byte) error {
	var errs []error
	query := req.URL.Query()
	for _, p := range op.params {
		var raw string
		var present bool
		switch p.in {
		case "path":
			raw, present = vars[p.name]
		case "query":
			var vs []string
			vs, present = query[p.name]
			if present {
				raw = vs[0]
				if raw == "" && p.typ != "string" && p.typ != "" {
					errs = append(errs, fmt.Errorf("query parameter %q: an empty value is not a %s", p.name, p.typ))
					continue
				}
			}
		case "header":
			raw = req.Header.Get(p.name)
			present = raw != ""
		case "cookie":
			if c, err := req.Cookie(p.name); err == nil {
				raw, present = c.Value, true
			}
		}
		if err := p.check(raw, present); err != nil {
			errs = append(errs, fmt.Errorf("%s parameter %q: %w", p.in, p.name, err))
		}
	}
	if op.body != nil {
		if err := op.body.check(req.Header.Get("Content-Type"), body); err != nil {
			errs = append(errs, fmt.Errorf("request body: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (p *param) check(raw string, present bool) error {
	if !present {
		if p.required {
			return errors.New("required but missing")
		}
		return nil
	}
	if p.schema == nil {
		return nil
	}
	v, err := typed(p.typ, raw)
	if err != nil {
		return err
	}
	return p.schema.validate(v)
}

// typed reads a parameter's string form as its schema's type.
func typed(typ, raw string) (any, error) {
	switch typ {
	case "integer", "number":
		if raw == "" || !json.Valid([]byte(raw)) || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
			return nil, fmt.Errorf("%q is not a number", raw)
		}
		return json.Number(raw), nil
	case "boolean":
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean", raw)
		}
		return b, nil
	}
	return raw, nil
}

func (b *requestBody) check(contentType string, body []byte) error {
	if len(body) == 0 {
		if b.required {
			return errors.New("required but missing")
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("Content-Type %q: %w", contentType, err)
	}
	m, ok := b.content[mt]
	if !ok {
		return fmt.Errorf("Content-Type %q is not one the operation takes", mt)
	}
	if m.schema == nil {
		return nil
	}
	var v any
	switch {
	case isJSON(mt):
		if v, err = decodeJSON(body); err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
	case mt == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return fmt.Errorf("not a urlencoded form: %w", err)
		}
		obj := map[string]any{}
		for name, vs := range form {
			if m.props[name] == "array" {
				list := make([]any, len(vs))
				for i, s := range vs {
					list[i] = s
				}
				obj[name] = list
				continue
			}
			if obj[name], err = typed(m.props[name], vs[0]); err != nil {
				return fmt.Errorf("member %q: %w", name, err)
			}
		}
		v = obj
	default:
		return nil
	}
	return m.schema.validate(v)
}

func (op *operation) checkResponse(status int, header http.Header, body []byte, noBody bool) error {
	code := strconv.Itoa(status)
	r := op.response[code]
	if r == nil {
		r = op.response[code[:1]+"XX"]
	}
	if r == nil {
		r = op.response["DEFAULT"]
	}
	if r == nil {
		return fmt.Errorf("status %d is not documented for %s", status, op.name)
	}
	var errs []error
	for _, h := range r.headers {
		raw := header.Get(h.name)
		if err := h.check(raw, raw != ""); err != nil {
			errs = append(errs, fmt.Errorf("response header %q: %w", h.name, err))
		}
	}
	if len(r.content) > 0 && !noBody {
		errs = append(errs, r.checkBody(header.Get("Content-Type"), body))
	}
	return errors.Join(errs...)
}

func (r *response) checkBody(contentType string, body []byte) error {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("response Content-Type %q: %w", contentType, err)
	}
	m, ok := r.content[mt]
	if !ok {
		return fmt.Errorf("response Content-Type %q is not documented", mt)
	}
	if m.schema == nil || !isJSON(mt) {
		return nil
	}
	v, err := decodeJSON(body)
	if err != nil {
		return fmt.Errorf("response body is not JSON: %w", err)
	}
	if err := m.schema.validate(v); err != nil {
		return fmt.Errorf("response body: %w", err)
	}
	return nil
}

func isJSON(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func isVar(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
