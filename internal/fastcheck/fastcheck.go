// Package fastcheck is how middleware asks a *pep.Client for one protected
// request's decisions without what the public API costs per call: the
// context WithToken makes, the request context option, the resources
// slice. A request answered from the cache then allocates nothing in pep.
//
// pep sets Check and Prepare when it is initialized; middleware, which
// imports pep, finds them set. Nothing else uses them.
package fastcheck

import (
	"context"
	"unicode/utf8"
)

// Askable reports whether a Checker may be asked about every scope of
// scopes on resource (pep's checkRequest then accepts them): a resource
// other than "" and the wildcard "*", at least one scope, none of them
// empty, every name valid UTF-8.
func Askable(resource string, scopes []string) bool {
	if resource == "" || resource == "*" || len(scopes) == 0 || !utf8.ValidString(resource) {
		return false
	}
	for _, s := range scopes {
		if s == "" || !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// Query is one protected request's question: every scope of Scopes on
// Resource, asked with the request context {Method, Path}.
type Query struct {
	// Token is the caller's Bearer token, sent as pep.WithToken sends it;
	// with Own, the client's own token is used and Token is ignored.
	Token string
	Own   bool
	// Route, when not nil, is what Prepare made of a route's constant
	// Resource and Scopes, which are then ignored.
	Route    any
	Resource string
	Scopes   []string
	Method   string
	Path     string
}

// Check answers q for client, which must be a *pep.Client, into res, which
// must be a *pep.Result: res.Decisions' backing array is reused when it
// has room for the decisions. It returns what CheckMany with WithToken(q.Token)
// and WithRequestContext({Method, Path}) would return, and counts and
// records the call as CheckMany does. It is nil until pep is initialized.
var Check func(ctx context.Context, client any, q Query, res any) error

// Prepare returns what pep makes once of a route's constant question,
// every scope of scopes on resource, for Query.Route: the pairs without
// repeats and the constant part of their cache keys. It returns nil for a
// question Check must refuse (Checkable's rule), which Query.Route must
// then not carry. It is nil until pep is initialized; what it returns is
// immutable and serves every client.
var Prepare func(resource string, scopes []string) any
