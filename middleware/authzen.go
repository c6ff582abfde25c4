package middleware

import (
	"context"
	"errors"
	"net/http"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/safego"
)

// Evaluator asks an AuthZEN PDP for one decision. *authzen.Client
// satisfies it; tests may supply their own.
type Evaluator interface {
	Evaluate(ctx context.Context, req authzen.Request, opts ...authzen.CallOption) (authzen.Decision, error)
}

var _ Evaluator = (*authzen.Client)(nil)

// RequireAuthZEN returns middleware that lets a request through only when
// the AuthZEN PDP behind e allows it. subject names who asks, from the
// request (an upstream authentication's verified identity, such as a
// verified token's sub); an error from it, or a subject without type or
// id, is the unauthorized answer (401 by default) and nothing is sent.
// target names the action and resource per request; an incomplete one (no
// action name, no resource type or id) is the denied answer (403) and
// nothing is sent, as is a subject or target holding a string that is not
// valid UTF-8 (authzen.ErrInvalidArgument). The request's method (the trusted override's with
// WithMethodOverride, which target then sees too) and path go as the
// AuthZEN context {"method": ..., "path": ...}.
//
// The PEP's credential at the PDP is e's own (authzen.Client.SetToken):
// the caller's token is not forwarded. So it fails closed as Require does
// with WithClientToken: a decision that is not allowed is 403, unless it
// was denied only for want of the PDP (its Cause matches
// authzen.ErrUnavailable: unreachable, timed out, 5xx, breaker open) or
// because e's credential was replaced during the call
// (authzen.ErrTokenChanged),
// which gets the unavailable answer (WithUnavailableHandler; 403 by
// default); a 401 for e's credential is the service's own outage (the
// unavailable answer), and so is e with no credential (before its first
// SetToken, or between the ClearToken and the SetToken of a refresh).
// The same request checks as Require's run first (one Authorization header
// at most, a canonical path, no method override header it does not trust). AuthZENDecisionFromContext gives the next
// handler, and the answering handlers, the decision.
//
// A nil e, subject or target, or a nil option, is a wiring mistake:
// RequireAuthZEN panics, as does the returned Middleware given a nil
// handler. Options are Require's; WithClientToken changes nothing here.
func RequireAuthZEN(e Evaluator, subject func(*http.Request) (authzen.Subject, error), target func(*http.Request) (authzen.Action, authzen.Resource), opts ...Option) Middleware {
	cfg := config{denied: http.HandlerFunc(forbidden), unauthorized: http.HandlerFunc(unauthorized)}
	if safego.IsNil(e) {
		cfg.mistakes = append(cfg.mistakes, "the Evaluator is nil")
	}
	if subject == nil {
		cfg.mistakes = append(cfg.mistakes, "the subject function is nil")
	}
	if target == nil {
		cfg.mistakes = append(cfg.mistakes, "the target function is nil")
	}
	mustApply(&cfg, opts)
	return func(next http.Handler) http.Handler {
		if safego.IsNil(next) {
			panic("middleware: the handler to protect is nil")
		}
		return &azGuard{e: e, subject: subject, target: target, cfg: cfg, next: next}
	}
}

// azGuard is one handler protected by an AuthZEN PDP.
type azGuard struct {
	e       Evaluator
	subject func(*http.Request) (authzen.Subject, error)
	target  func(*http.Request) (authzen.Action, authzen.Resource)
	cfg     config
	next    http.Handler
}

// with returns the guard with opts applied after its own options.
func (g *azGuard) with(opts []Option) http.Handler {
	cfg := g.cfg
	mustApply(&cfg, opts)
	return &azGuard{e: g.e, subject: g.subject, target: g.target, cfg: cfg, next: g.next}
}

// azDecisionKey is the context key of an AuthZEN decision.
type azDecisionKey struct{}

// AuthZENDecisionFromContext returns the decision RequireAuthZEN made for
// this request, and false when none was made (no such middleware ran, or
// the caller or the target could not be named).
func AuthZENDecisionFromContext(ctx context.Context) (authzen.Decision, bool) {
	d, ok := ctx.Value(azDecisionKey{}).(authzen.Decision)
	return d, ok
}

// ServeHTTP implements http.Handler.
func (g *azGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var callback string // as guard.ServeHTTP's
	defer func() {
		if callback != "" {
			g.cfg.recovered(w, r, callback, recover())
		}
	}()
	if !g.cfg.admit(w, r, r.Header["Authorization"]) {
		return
	}
	callback = "the subject function"
	sub, err := g.subject(r)
	callback = ""
	if err != nil || sub.Type == "" || sub.ID == "" {
		g.cfg.unauthorized.ServeHTTP(w, r)
		return
	}
	// Read after the subject function, which may change the header.
	f := g.cfg.fields(r.Header)
	method, body, ok := g.cfg.checkedMethod(w, r, &f)
	if !ok {
		return
	}
	sr := seen(r, method, body) // see override.go
	callback = "the target function"
	action, resource := g.target(sr)
	callback = ""
	if action.Name == "" || resource.Type == "" || resource.ID == "" {
		g.cfg.denied.ServeHTTP(w, handedOver(sr, r))
		return
	}
	callback = "the Evaluator"
	d, err := g.e.Evaluate(r.Context(), authzen.Request{Subject: sub, Action: action, Resource: resource,
		Context: map[string]any{"method": method, "path": r.URL.Path}})
	callback = ""
	fwd := sr.WithContext(context.WithValue(r.Context(), azDecisionKey{}, d))
	handOver(fwd, r)
	r = fwd
	switch {
	case errors.Is(err, authzen.ErrNoToken):
		// The PEP has no usable credential of its own (not set yet, or
		// cleared by a refresh written as ClearToken then SetToken): no
		// decision could be had, and not by the caller's doing.
		g.cfg.unavailableHandler().ServeHTTP(w, r)
	case errors.Is(err, authzen.ErrInvalidArgument):
		g.cfg.denied.ServeHTTP(w, r)
	case err != nil:
		// The PEP's own credential refused, a refused DPoP proof, or
		// anything unforeseen: no decision, and not the caller's doing.
		g.cfg.unavailableHandler().ServeHTTP(w, r)
	case d.Allowed():
		g.cfg.pass(g.next, w, r)
	case noDecision(d.Cause): // authzen's sentinels are pep's
		g.cfg.unavailableHandler().ServeHTTP(w, r)
	default:
		g.cfg.denied.ServeHTTP(w, r)
	}
}
