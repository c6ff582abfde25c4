package webui_test

import (
	"strings"

	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"
)

// driver is what the scenario needs of a browser: open a page, fill and
// submit the page's forms, follow its links and read its text. Each
// method fails the test when the page does not have what it names, and
// every call that loads a page waits for the element until to be on it.
// chromiumDriver is a real browser; httpDriver reads the served HTML and
// submits its forms over plain HTTP.
type driver interface {
	// open loads path of the server and waits for until.
	open(path string, until sel)
	// typeIn types value into the field name of the form with id form.
	typeIn(form, name, value string)
	// choose sets the field name of form (a select, or an input with a
	// datalist) to value.
	choose(form, name, value string)
	// submit submits the form with id form with its submit button and
	// waits for until on the page that answers.
	submit(form string, until sel)
	// click follows the link s and waits for until.
	click(s, until sel)
	// text returns the text of the first element s matches, its white
	// space collapsed.
	text(s sel) string
	// location returns the URL of the page shown.
	location() string
	// screenshot saves the page as webui-name.png where the test asks
	// for screenshots; a driver without pixels does nothing.
	screenshot(name string)
}

// sel names an element twice: as the query a browser resolves (CSS or
// XPath, chromedp.Search) and as a lookup in the parsed HTML. Both are
// built by the constructors below from the same ids, classes and texts.
type sel struct {
	query chromedp.Search
	find  func(doc *html.Node) *html.Node
}

func (s sel) String() string { return string(s.query) }

// byID is the element with id.
func byID(id string) sel {
	return sel{chromedp.Search("#" + id), func(doc *html.Node) *html.Node {
		return first(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	}}
}

// firstOfClass is the first element of class.
func firstOfClass(class string) sel {
	return sel{chromedp.Search("." + class), func(doc *html.Node) *html.Node {
		return first(doc, func(n *html.Node) bool { return hasClass(n, class) })
	}}
}

// matchedCheck is the first permission check that grants (an li.matched
// right under a ul.checks).
func matchedCheck() sel {
	return sel{chromedp.Search(`.checks > li.matched`), func(doc *html.Node) *html.Node {
		return first(doc, func(n *html.Node) bool {
			return isElem(n, "li") && hasClass(n, "matched") && n.Parent != nil && isElem(n.Parent, "ul") && hasClass(n.Parent, "checks")
		})
	}}
}

// link is the link with text inside the element with id within.
func link(within, text string) sel {
	return sel{chromedp.Search(`//*[@id="` + within + `"]//a[text()="` + text + `"]`), func(doc *html.Node) *html.Node {
		return first(byID(within).find(doc), func(n *html.Node) bool { return isElem(n, "a") && textOf(n) == text })
	}}
}

// members is the members line of the department at path in the
// organization page's tree (path: the names from a top department down).
func members(path ...string) sel {
	q := `//ul[@id="tree"]`
	for i, name := range path {
		if i > 0 {
			q += `/ul`
		}
		q += `/li[span[@class="dept-name"]="` + name + `"]`
	}
	return sel{chromedp.Search(q + `/div[@class="members"]`), func(doc *html.Node) *html.Node {
		list := byID("tree").find(doc)
		var dept *html.Node
		for _, name := range path {
			dept = child(list, func(li *html.Node) bool {
				return isElem(li, "li") && child(li, func(s *html.Node) bool {
					return isElem(s, "span") && attr(s, "class") == "dept-name" && textOf(s) == name
				}) != nil
			})
			list = child(dept, func(n *html.Node) bool { return isElem(n, "ul") })
		}
		return child(dept, func(n *html.Node) bool { return isElem(n, "div") && attr(n, "class") == "members" })
	}}
}

// member is the link to name in the members line of the department at path.
func member(name string, path ...string) sel {
	m := members(path...)
	return sel{m.query + chromedp.Search(`/a[text()="`+name+`"]`), func(doc *html.Node) *html.Node {
		return child(m.find(doc), func(n *html.Node) bool { return isElem(n, "a") && textOf(n) == name })
	}}
}

// heldBy is the "held" cell of role in the user page's effective roles.
func heldBy(role string) sel {
	return sel{chromedp.Search(`//table[@id="effective"]//tr[td[@class="role-name"]="` + role + `"]/td[2]`), func(doc *html.Node) *html.Node {
		row := first(byID("effective").find(doc), func(tr *html.Node) bool {
			return isElem(tr, "tr") && child(tr, func(td *html.Node) bool {
				return isElem(td, "td") && attr(td, "class") == "role-name" && textOf(td) == role
			}) != nil
		})
		var cells []*html.Node
		for td := range children(row) {
			if isElem(td, "td") {
				cells = append(cells, td)
			}
		}
		if len(cells) < 2 {
			return nil
		}
		return cells[1]
	}}
}

// first is the first element at or under n, in document order, that
// matches; nil when none does or n is nil.
func first(n *html.Node, match func(*html.Node) bool) *html.Node {
	if n == nil {
		return nil
	}
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			return d
		}
	}
	return nil
}

// child is the first element right under n that matches; nil when none
// does or n is nil.
func child(n *html.Node, match func(*html.Node) bool) *html.Node {
	for c := range children(n) {
		if c.Type == html.ElementNode && match(c) {
			return c
		}
	}
	return nil
}

func children(n *html.Node) func(func(*html.Node) bool) {
	return func(yield func(*html.Node) bool) {
		if n == nil {
			return
		}
		for c := range n.ChildNodes() {
			if !yield(c) {
				return
			}
		}
	}
}

func isElem(n *html.Node, tag string) bool { return n.Type == html.ElementNode && n.Data == tag }

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for c := range strings.FieldsSeq(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// textOf is n's text as a reader sees it: its text nodes joined as they
// are (the pages put white space between block elements), runs of white
// space one space, trimmed.
func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
