package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/orgauthz/orgauthz/pep"
)

// Checker asks for decisions. *pep.Client satisfies it; tests may supply
// their own.
type Checker interface {
	CheckMany(ctx context.Context, resources []pep.Resource, opts ...pep.CallOption) (pep.Result, error)
}

var _ Checker = (*pep.Client)(nil)

// Option changes how a middleware built by RequireFunc answers.
type Option func(*config)

type config struct {
	denied         http.Handler
	unauthorized   http.Handler
	useClientToken bool
}

// WithDeniedHandler replaces the 403 answer. The handler runs instead of the
// protected one when the decision is not a grant; DecisionFromContext gives
// it the result.
func WithDeniedHandler(h http.Handler) Option {
	return func(c *config) { c.denied = h }
}

// WithUnauthorizedHandler replaces the 401 answer given when the request
// carries no Bearer token or the gateway refuses it. DecisionFromContext
// reports false for the first case and the refused result for the second.
func WithUnauthorizedHandler(h http.Handler) Option {
	return func(c *config) { c.unauthorized = h }
}

// WithClientToken makes the middleware use the client's own token (set with
// SetToken or SetDPoPToken) instead of forwarding the caller's. Requests
// without an Authorization header are then checked too.
func WithClientToken() Option {
	return func(c *config) { c.useClientToken = true }
}

// Require returns middleware that lets a request through only when the
// caller holds every one of scopes on resource. It answers 401 and 403 as
// the package documentation describes.
func Require(c Checker, resource string, scopes ...string) func(http.Handler) http.Handler {
	return RequireFunc(c, Static(resource, scopes...))
}

// Static returns a RequireFunc function that names the same resource and
// scopes for every request.
func Static(resource string, scopes ...string) func(*http.Request) (string, []string) {
	scopes = append([]string(nil), scopes...)
	return func(*http.Request) (string, []string) { return resource, scopes }
}

// RequireFunc is Require with the resource and scopes chosen per request by
// fn, and with options. A fn that returns an empty resource or no scopes is a
// programming mistake: the request gets a 500 and the handler does not run.
func RequireFunc(c Checker, fn func(*http.Request) (resource string, scopes []string), opts ...Option) func(http.Handler) http.Handler {
	cfg := config{denied: http.HandlerFunc(forbidden), unauthorized: http.HandlerFunc(unauthorized)}
	for _, o := range opts {
		o(&cfg)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			resource, scopes := fn(r)
			if resource == "" || len(scopes) == 0 {
				writeError(w, http.StatusInternalServerError, "authorization check names no resource or scope")
				return
			}
			ctx := r.Context()
			if !cfg.useClientToken {
				token, ok := bearerToken(r)
				if !ok {
					cfg.unauthorized.ServeHTTP(w, r)
					return
				}
				ctx = pep.WithToken(ctx, token)
			}
			res, err := c.CheckMany(ctx, []pep.Resource{{Name: resource, Scopes: scopes}},
				pep.WithRequestContext(pep.RequestContext{Method: r.Method, Path: r.URL.Path}))
			r = r.WithContext(context.WithValue(r.Context(), resultKey{}, res))
			switch {
			case errors.Is(err, pep.ErrUnauthorized):
				cfg.unauthorized.ServeHTTP(w, r)
			case errors.Is(err, pep.ErrNoToken):
				// Only with WithClientToken: the service itself has no token.
				writeError(w, http.StatusInternalServerError, "the authorization client has no token")
			case err != nil:
				writeError(w, http.StatusInternalServerError, "authorization check failed")
			case !res.Allowed():
				cfg.denied.ServeHTTP(w, r)
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
}

// resultKey is the context key of the decision.
type resultKey struct{}

// DecisionFromContext returns the decision the middleware made for this
// request, and false when no decision was made (no middleware ran, or the
// request had no token).
func DecisionFromContext(ctx context.Context) (pep.Result, bool) {
	res, ok := ctx.Value(resultKey{}).(pep.Result)
	return res, ok
}

// bearerToken returns the token of an "Authorization: Bearer" header. The
// scheme is case-insensitive (RFC 9110 section 11.1).
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// forbidden is the default denied answer.
func forbidden(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusForbidden, "the caller is not allowed to do this")
}

// unauthorized is the default 401 answer.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	challenge := `Bearer`
	if _, decided := DecisionFromContext(r.Context()); decided {
		challenge = `Bearer error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeError(w, http.StatusUnauthorized, "a valid Bearer token is required")
}

// writeError writes the service's error body.
func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{http.StatusText(status), message})
}
