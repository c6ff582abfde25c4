package decision

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Text renders the explanation for a person reading a test log: the
// overall status and subject on the first line, then each pair with its
// reason; for a pair that is not GRANT every permission that applies with
// the facts it tested; then the subject's roles with their sources and its
// groups. It is plain ASCII over several lines, without a final newline.
func (e *Explanation) Text() string {
	var b strings.Builder
	sub := &e.Subject
	who := sub.Username
	if !sub.Known {
		who = "user id " + quoted(sub.UserID)
	} else {
		who = lit(who)
	}
	method := lit(e.Method)
	if e.Method == "" {
		method = "none"
	}
	fmt.Fprintf(&b, "%s for %s on client %s (method %s", lit(string(e.Status)), who, lit(e.Client), method)
	if e.Path != "" {
		fmt.Fprintf(&b, ", path %s", lit(e.Path))
	}
	switch {
	case sub.Organization == "":
		b.WriteString(", assignments in every organization count)")
	case sub.OrganizationUnknown:
		fmt.Fprintf(&b, ", organization %s names no organization: no assignment counts)", quoted(sub.Organization))
	default:
		fmt.Fprintf(&b, ", organization %s: only assignments there count)", quoted(sub.Organization))
	}
	for i := range e.Pairs {
		pe := &e.Pairs[i]
		fmt.Fprintf(&b, "\n  %s: %s, %s", pairName(pe), lit(string(pe.Status)), pe.Reason)
		if pe.Status == Grant {
			continue
		}
		for j := range pe.Permissions {
			writeCheck(&b, &pe.Permissions[j])
		}
	}
	if !sub.Known {
		b.WriteString("\n  the realm has no such user: no roles, no groups")
		return b.String()
	}
	fmt.Fprintf(&b, "\n  %s's roles: ", who)
	if len(sub.Roles) == 0 {
		b.WriteString("none")
	}
	for i, er := range sub.Roles {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s)", lit(er.Name), sources(er.Sources))
	}
	fmt.Fprintf(&b, "\n  %s's groups: ", who)
	if len(sub.Groups) == 0 {
		b.WriteString("none")
	}
	for i, g := range sub.Groups {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(lit(g.Name))
	}
	return b.String()
}

// lit is s as it may appear in the text: s itself when every character of
// it is printable and none is a quote or backslash, else s as a Go string
// literal (strconv.QuoteToASCII), which escapes newlines, control
// characters and everything outside ASCII. An unquoted value therefore
// never holds a quote, and a quoted one always starts with one: the two
// cannot be confused. Every value the text shows goes through lit.
func lit(s string) string {
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) || r == '"' || r == '\\' {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}

// quoted is s as a Go string literal, always quoted (strconv.QuoteToASCII),
// for values the text shows in quotes whatever they hold.
func quoted(s string) string { return strconv.QuoteToASCII(s) }

// lits is each of ss through lit, joined by sep.
func lits(ss []string, sep string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = lit(s)
	}
	return strings.Join(out, sep)
}

// pairName is "resource#scope", or the resource alone for a resource asked
// with no scope.
func pairName(pe *PairExplanation) string {
	if pe.Scope == "" {
		return lit(pe.Resource)
	}
	return lit(pe.Resource) + "#" + lit(pe.Scope)
}

// writeCheck writes one permission and each fact it tested.
func writeCheck(b *strings.Builder, pc *PermissionCheck) {
	verdict := "does not match"
	if pc.Matched {
		verdict = "matches"
	}
	fmt.Fprintf(b, "\n    permission %s %s:", quoted(pc.Name), verdict)
	var facts []string
	if m := pc.Method; m != nil {
		allowed := lits(m.Allowed, ", ")
		switch {
		case m.Matched:
			facts = append(facts, fmt.Sprintf("method %s is allowed (%s)", lit(m.Method), allowed))
		case m.Method == "":
			facts = append(facts, fmt.Sprintf("the request gives no method, and it allows only %s", allowed))
		default:
			facts = append(facts, fmt.Sprintf("method %s is not one it allows (%s)", lit(m.Method), allowed))
		}
	}
	if o := pc.Owner; o != nil {
		switch {
		case o.Matched:
			facts = append(facts, fmt.Sprintf("the resource's %s is the subject's", quoted(o.Property)))
		case !o.Instance:
			facts = append(facts, fmt.Sprintf("it needs a resource instance whose %s is the subject's username or email, and the request names none", quoted(o.Property)))
		case !o.Present:
			facts = append(facts, fmt.Sprintf("the resource has no %s property", quoted(o.Property)))
		case o.Value == "":
			facts = append(facts, fmt.Sprintf("the resource's %s is not a name", quoted(o.Property)))
		default:
			facts = append(facts, fmt.Sprintf("the resource's %s is %s, not the subject's username or email", quoted(o.Property), quoted(o.Value)))
		}
	}
	for _, f := range pc.Roles {
		if f.Matched {
			facts = append(facts, fmt.Sprintf("role %s: held (%s)", lit(f.Name), sources(f.Sources)))
		} else {
			facts = append(facts, fmt.Sprintf("role %s: not held", lit(f.Name)))
		}
	}
	for _, f := range pc.Groups {
		facts = append(facts, fmt.Sprintf("group %s: %s", lit(f.Name), yes(f.Matched, "member", "not a member")))
	}
	for _, f := range pc.Users {
		facts = append(facts, fmt.Sprintf("user %s: %s", lit(f.Name), yes(f.Matched, "is the subject", "is not the subject")))
	}
	if len(pc.Roles)+len(pc.Groups)+len(pc.Users) == 0 {
		facts = append(facts, "it names no role, group or user")
	}
	for _, f := range facts {
		b.WriteString("\n      ")
		b.WriteString(f)
	}
}

func yes(ok bool, y, n string) string {
	if ok {
		return y
	}
	return n
}

// sources says how a role is held, e.g. "group support; organization role
// of Acme EU, through department Sales".
func sources(srcs []RoleSource) string {
	out := make([]string, len(srcs))
	for i, s := range srcs {
		switch s.Kind {
		case FromRealmRole:
			out[i] = "realm role"
		case FromGroup:
			out[i] = "group " + lit(s.Group)
		case FromOrganization:
			out[i] = fmt.Sprintf("organization role of %s, through department %s", lit(s.Organization), lit(s.Department))
		case FromTemplate:
			out[i] = fmt.Sprintf("template role of department %s in %s", lit(s.Department), lit(s.Organization))
		default:
			out[i] = lit(string(s.Kind))
		}
	}
	return strings.Join(out, "; ")
}
