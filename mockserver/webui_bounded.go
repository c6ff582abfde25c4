package mockserver

import (
	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
)

// This file is the one shape every list of a web UI page has: bounded,
// at most maxUIRows entries and the count of those left out. The page
// data types hold no other slice (TestWebUIPageListsAreBounded walks them),
// so a realm of any size renders a page of bounded size.

// bounded is a list a page shows: its first maxUIRows entries and how many
// more there are.
type bounded[T any] struct {
	Rows []T
	More int
}

// bound returns the bounded list of rows.
func bound[T any](rows []T) bounded[T] {
	if len(rows) > maxUIRows {
		return bounded[T]{Rows: rows[:maxUIRows], More: len(rows) - maxUIRows}
	}
	return bounded[T]{Rows: rows}
}

// boundMap returns the bounded list of f of each of rows, calling f for the
// rows shown only.
func boundMap[S, T any](rows []S, f func(*S) T) bounded[T] {
	n := min(len(rows), maxUIRows)
	out := bounded[T]{Rows: make([]T, n), More: len(rows) - n}
	for i := range n {
		out.Rows[i] = f(&rows[i])
	}
	return out
}

// uiList is a bounded list of links.
type uiList = bounded[uiLink]

func boundedList(rows []uiLink) uiList { return bound(rows) }

// uiRole is an effective role with every way the subject holds it.
type uiRole struct {
	Name    string
	Sources bounded[decision.RoleSource]
}

func uiRoles(ers []decision.EffectiveRole) bounded[uiRole] {
	return boundMap(ers, func(er *decision.EffectiveRole) uiRole {
		return uiRole{Name: er.Name, Sources: bound(er.Sources)}
	})
}

// uiExplanation is a decision.Explanation as the evaluator shows it, every
// list bounded; the pairs past maxUIRows were decided (Status is the whole
// request's) but not explained (decision.Request.MaxPairs).
type uiExplanation struct {
	Status                   decision.Status
	Client, Method, Username string
	Organization             string
	OrganizationUnknown      bool
	Pairs                    bounded[uiPair]
	Roles                    bounded[uiRole] // the subject's effective roles
}

// uiPair is a pair of an explanation.
type uiPair struct {
	Resource, Scope string
	Status          decision.Status
	Reason          string
	Permissions     bounded[uiCheck]
}

// uiCheck is a permission that applies to a pair, with the facts it
// tested.
type uiCheck struct {
	Name    string
	Matched bool
	Method  *uiMethodCheck
	Owner   *decision.OwnerCheck
	Roles   bounded[uiFact]
	Groups  bounded[uiFact]
	Users   bounded[uiFact]
}

// uiMethodCheck is a permission's method limit against the request's.
type uiMethodCheck struct {
	Allowed bounded[string]
	Method  string
	Matched bool
}

// uiFact is a role, group or user a permission names, whether the subject
// has it, and for a held role how.
type uiFact struct {
	Name    string
	Matched bool
	Sources bounded[decision.RoleSource]
}

func uiFacts(fs []decision.FactCheck) bounded[uiFact] {
	return boundMap(fs, func(f *decision.FactCheck) uiFact {
		return uiFact{Name: f.Name, Matched: f.Matched, Sources: bound(f.Sources)}
	})
}

// newUIExplanation is ex as the evaluator shows it.
func newUIExplanation(ex *decision.Explanation) *uiExplanation {
	sub := &ex.Subject
	out := &uiExplanation{Status: ex.Status, Client: ex.Client, Method: ex.Method, Username: sub.Username,
		Organization: sub.Organization, OrganizationUnknown: sub.OrganizationUnknown, Roles: uiRoles(sub.Roles)}
	out.Pairs = boundMap(ex.Pairs, func(pe *decision.PairExplanation) uiPair {
		return uiPair{Resource: pe.Resource, Scope: pe.Scope, Status: pe.Status, Reason: pe.Reason,
			Permissions: boundMap(pe.Permissions, func(pc *decision.PermissionCheck) uiCheck {
				c := uiCheck{Name: pc.Name, Matched: pc.Matched, Owner: pc.Owner,
					Roles: uiFacts(pc.Roles), Groups: uiFacts(pc.Groups), Users: uiFacts(pc.Users)}
				if m := pc.Method; m != nil {
					c.Method = &uiMethodCheck{Allowed: bound(m.Allowed), Method: m.Method, Matched: m.Matched}
				}
				return c
			})}
	})
	out.Pairs.More += ex.MorePairs
	return out
}
