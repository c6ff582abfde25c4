package webui_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// httpDriver is the scenario's browser without a browser: net/http with a
// cookie jar, following redirects. It submits the forms the served page
// holds (their method, action, hidden fields such as the CSRF token, and
// the values typed into their fields), with the Origin header a browser
// sends, and reads the served HTML by the same ids and classes the
// browser's selectors name. It runs no script and renders nothing: what
// it proves is the pages as served.
type httpDriver struct {
	t      *testing.T
	base   string
	client *http.Client
	url    *url.URL              // the page shown
	doc    *html.Node            // its parsed HTML
	values map[string]url.Values // typed into each form (by id) of the page
}

func newHTTPDriver(t *testing.T, base string) *httpDriver {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar}
	t.Cleanup(c.CloseIdleConnections)
	return &httpDriver{t: t, base: base, client: c}
}

// load sends req, shows the page that answers (after redirects) and
// requires until on it.
func (d *httpDriver) load(what string, req *http.Request, until sel) {
	d.t.Helper()
	// A browser's Accept: the server answers errors with a page too.
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8")
	resp, err := d.client.Do(req)
	require.NoError(d.t, err, what)
	defer resp.Body.Close()
	require.True(d.t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"),
		"%s: %s answered %s, not a page", what, resp.Request.URL, resp.Header.Get("Content-Type"))
	doc, err := html.Parse(resp.Body)
	require.NoError(d.t, err, what)
	d.url, d.doc, d.values = resp.Request.URL, doc, map[string]url.Values{}
	require.NotNil(d.t, until.find(doc), "%s: %s (%d) has no %s", what, d.url, resp.StatusCode, until)
}

func (d *httpDriver) get(what, target string, until sel) {
	d.t.Helper()
	req, err := http.NewRequestWithContext(d.t.Context(), http.MethodGet, target, nil)
	require.NoError(d.t, err)
	d.load(what, req, until)
}

func (d *httpDriver) open(path string, until sel) {
	d.t.Helper()
	d.get("open "+path, d.base+path, until)
}

// form is the form with id on the page shown.
func (d *httpDriver) form(id string) *html.Node {
	d.t.Helper()
	f := byID(id).find(d.doc)
	require.True(d.t, f != nil && isElem(f, "form"), "%s has no form #%s", d.url, id)
	return f
}

// fields are the named fields of form f: inputs, selects, textareas.
func fields(f *html.Node) []*html.Node {
	var out []*html.Node
	for n := range f.Descendants() {
		if n.Type == html.ElementNode && attr(n, "name") != "" && slices.Contains([]string{"input", "select", "textarea"}, n.Data) {
			out = append(out, n)
		}
	}
	return out
}

// set records value for the field name of form, which must have one.
func (d *httpDriver) set(form, name, value string) *html.Node {
	d.t.Helper()
	i := slices.IndexFunc(fields(d.form(form)), func(n *html.Node) bool { return attr(n, "name") == name })
	require.NotEqual(d.t, -1, i, "form #%s of %s has no field %s", form, d.url, name)
	if d.values[form] == nil {
		d.values[form] = url.Values{}
	}
	d.values[form].Set(name, value)
	return fields(d.form(form))[i]
}

func (d *httpDriver) typeIn(form, name, value string) {
	d.t.Helper()
	f := d.set(form, name, value)
	require.True(d.t, isElem(f, "input") || isElem(f, "textarea"), "field %s of #%s is a %s: choose a value", name, form, f.Data)
	// Typing appends to what the field holds, as in a browser.
	d.values[form].Set(name, attr(f, "value")+value)
}

func (d *httpDriver) choose(form, name, value string) {
	d.t.Helper()
	f := d.set(form, name, value)
	if isElem(f, "select") {
		var opts []string
		for o := range f.Descendants() {
			if isElem(o, "option") {
				opts = append(opts, optionValue(o))
			}
		}
		require.Contains(d.t, opts, value, "select %s of #%s offers no %q", name, form, value)
	}
}

// optionValue is what an option submits: its value, else its text.
func optionValue(o *html.Node) string {
	for _, a := range o.Attr {
		if a.Key == "value" {
			return a.Val
		}
	}
	return textOf(o)
}

// submit sends the form as a browser would: each named field with what
// was typed or chosen, else what the page put in it (a select's selected
// option, else its first); to the form's action resolved against the
// page, with its method.
func (d *httpDriver) submit(form string, until sel) {
	d.t.Helper()
	f := d.form(form)
	body := url.Values{}
	for _, n := range fields(f) {
		name := attr(n, "name")
		switch {
		case d.values[form].Has(name):
			body.Add(name, d.values[form].Get(name))
		case isElem(n, "select"):
			var chosen *html.Node
			for o := range n.Descendants() {
				if isElem(o, "option") && (chosen == nil || slices.ContainsFunc(o.Attr, func(a html.Attribute) bool { return a.Key == "selected" })) {
					chosen = o
				}
			}
			if chosen != nil {
				body.Add(name, optionValue(chosen))
			}
		case isElem(n, "textarea"):
			body.Add(name, textOf(n))
		default:
			body.Add(name, attr(n, "value"))
		}
	}
	action, err := d.url.Parse(attr(f, "action"))
	require.NoError(d.t, err, "form #%s's action", form)
	method := strings.ToUpper(attr(f, "method"))
	var req *http.Request
	if method == http.MethodPost {
		req, err = http.NewRequestWithContext(d.t.Context(), method, action.String(), strings.NewReader(body.Encode()))
		require.NoError(d.t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", d.url.Scheme+"://"+d.url.Host)
	} else {
		action.RawQuery = body.Encode()
		req, err = http.NewRequestWithContext(d.t.Context(), http.MethodGet, action.String(), nil)
		require.NoError(d.t, err)
	}
	d.load("submit #"+form, req, until)
}

func (d *httpDriver) click(s, until sel) {
	d.t.Helper()
	a := s.find(d.doc)
	require.True(d.t, a != nil && isElem(a, "a"), "%s has no link %s", d.url, s)
	target, err := d.url.Parse(attr(a, "href"))
	require.NoError(d.t, err, "link %s", s)
	d.get("click "+s.String(), target.String(), until)
}

func (d *httpDriver) text(s sel) string {
	d.t.Helper()
	n := s.find(d.doc)
	require.NotNil(d.t, n, "%s has no %s", d.url, s)
	return textOf(n)
}

func (d *httpDriver) location() string { return d.url.String() }

func (d *httpDriver) screenshot(string) {}
