// Package grpcpep protects gRPC services with decisions from a pep client:
// unary and stream server interceptors that apply the rules of package
// middleware to every call.
//
//	guard := grpcpep.Map(map[string]grpcpep.Rule{
//		"/orders.v1.Orders/Get":  {Resource: "orders", Scopes: []string{"read"}},
//		"/orders.v1.Orders/Tail": {Resource: "orders", Scopes: []string{"read"}},
//	})
//	public := grpcpep.WithPublicMethods(grpcpep.HealthMethods...) // probes
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpcpep.UnaryServerInterceptor(client, guard, public)),
//		grpc.ChainStreamInterceptor(grpcpep.StreamServerInterceptor(client, guard, public)))
//	reg := grpcpep.CheckedRegistrar(srv)
//	orderspb.RegisterOrdersServer(reg, impl)
//	healthpb.RegisterHealthServer(reg, health.NewServer())
//
// The resource and scopes of a call come from a Func of its full method name
// ("/package.Service/Method"); Map makes one from a map, naming nothing for
// a method it does not list. The caller's token is read from the one
// "authorization" metadata value ("Bearer <token>", by
// middleware.BearerFromValues) and forwarded to the gateway (pep.WithToken),
// and the decision context is the call as HTTP/2 carries it: the method
// POST and the full method name as the path. The handler runs only when
// every scope is granted; it can read the decision with
// DecisionFromContext. Otherwise the call ends with a status whose code
// says why, by middleware.Classify, the middleware's own rule:
//
//   - more than one authorization value: InvalidArgument (the middleware's
//     400), and no gateway call;
//   - no authorization value, one that is not a Bearer token, a token the
//     client cannot send (longer than its pep.WithMaxTokenBytes), or one
//     the gateway refused: Unauthenticated (the middleware's 401);
//   - a method the Func names nothing for (not in Map's map), and any
//     denial: PermissionDenied (403);
//   - a denial that came only from an outage (the gateway unreachable,
//     slow, 5xx, the breaker open, the client closed) or any error the
//     client did not foresee: Unavailable, or the code WithUnavailableCode
//     picks;
//   - a decision that ended because the caller's deadline passed or the
//     caller cancelled: DeadlineExceeded or Canceled, the caller's own
//     reason (no client retries what it gave up on).
//
// The caller's deadline and cancellation bound the decision call: a call
// whose caller gave up is not decided, and its handler never runs. Status
// messages never quote the token. Nothing a caller sends makes an
// interceptor answer Internal or panic; wiring mistakes (a nil Checker or
// Func, a map entry without resource or scope, an option choosing OK, a
// public method that is not an exact full method name) panic when the
// interceptor is built. A Func or Checker that panics on a call is the
// user's bug, not the caller's: the interceptor recovers it (grpc-go does
// not, and the process would die), logs it at Error and answers
// PermissionDenied, keeping the table above (fail closed, never Internal).
//
// A stream's grant has a lifetime (WithStreamRedecide, 30 s by default):
// once it is older, the stream's next message waits for a new decision,
// and a stream whose token expired, was revoked or lost the scope ends
// with the code a new call would get.
//
// The only way past the interceptors is WithPublicMethods, which names
// methods served to anyone (health probes: HealthMethods) by their exact
// full names. grpc-go (v1.85) runs a stream whose grpc.StreamDesc sets
// neither ServerStreams nor ClientStreams past both interceptors;
// protoc-gen-go-grpc never makes one, and CheckedRegistrar (or
// CheckServiceDesc) refuses to register one, since the server's
// GetServiceInfo cannot tell it from a unary method.
//
// gRPC's own server answers a method no service registers with
// Unimplemented before any interceptor runs, unless
// grpc.UnknownServiceHandler is set; the stream interceptor then guards
// that handler too, and Map names nothing for it.
package grpcpep

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// Checker asks for decisions. *pep.Client satisfies it; tests may supply
// their own.
type Checker interface {
	CheckMany(ctx context.Context, resources []pep.Resource, opts ...pep.CallOption) (pep.Result, error)
}

var _ Checker = (*pep.Client)(nil)

// Func names the resource and scopes a call needs, from its full method
// name ("/package.Service/Method"). A resource the client refuses to check
// ("" or the wildcard "*") or no scope, or an empty one, makes the answer
// PermissionDenied without a gateway call. It must be safe for concurrent
// use. A Func that panics costs only its call: the interceptor recovers,
// logs the panic at Error (WithLogger) and answers PermissionDenied.
type Func func(fullMethod string) (resource string, scopes []string)

// Rule is the resource and scopes of one method in Map's map.
type Rule struct {
	Resource string
	Scopes   []string
}

// Map returns a Func that looks the full method name up in rules (copied,
// so later changes to it do nothing): a method it does not list names
// nothing, and its calls get PermissionDenied without a gateway call.
// A key that is not a full method name ("/package.Service/Method"), a
// resource "" or "*", or a rule without scopes or with an empty one is a
// wiring mistake: Map panics, naming the key.
func Map(rules map[string]Rule) Func {
	copied := make(map[string]Rule, len(rules))
	for method, r := range rules {
		switch {
		case !isFullMethod(method):
			panic("grpcpep: Map's key " + quote(method) + ` is not a full method name "/package.Service/Method"`)
		case !middleware.Checkable(r.Resource, r.Scopes):
			panic("grpcpep: Map's rule for " + quote(method) + ` needs a resource other than "" and "*" and at least one scope, none of them empty, all valid UTF-8`)
		}
		copied[method] = Rule{Resource: r.Resource, Scopes: append([]string(nil), r.Scopes...)}
	}
	return func(fullMethod string) (string, []string) {
		r, ok := copied[fullMethod]
		if !ok {
			return "", nil
		}
		return r.Resource, append([]string(nil), r.Scopes...)
	}
}

// isFullMethod reports whether method is a full method name,
// "/package.Service/Method".
func isFullMethod(method string) bool {
	service, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	return strings.HasPrefix(method, "/") && ok && service != "" && name != "" && !strings.Contains(name, "/")
}

func quote(s string) string { return `"` + s + `"` }

// Option changes how an interceptor answers. A nil Option is a wiring
// mistake: the interceptor panics when it is built.
type Option func(*config)

type config struct {
	unavailable    codes.Code
	useClientToken bool
	// public are the full methods of WithPublicMethods.
	public map[string]bool
	// redecide is the lifetime of a stream's grant (WithStreamRedecide).
	redecide time.Duration
	// now reads the clock a stream's grant is timed on: time.Now, or a
	// test's clock.
	now      func() time.Time
	logger   *slog.Logger
	mistakes []string
}

// DefaultStreamRedecide is how long a stream's grant lasts before the
// stream's next message has it decided again (WithStreamRedecide).
const DefaultStreamRedecide = 30 * time.Second

// MinStreamRedecide is the shortest interval WithStreamRedecide takes: each
// re-decision is a gateway request past the client's cache, so a shorter
// one would make a stream's every message a gateway request.
const MinStreamRedecide = time.Second

// WithStreamRedecide sets the lifetime of a stream's grant, counted from
// when its decision was asked of the gateway (a stream is opened on a
// decision asked past the client's cache): once the last
// decision of an open stream is older than interval (on the monotonic
// clock, so time the process spent frozen counts), its next message, sent
// or received, waits for a new decision of the same method and caller's
// token, asked of the gateway past the client's cache (pep.NoCache); a
// stream whose new decision is not a grant ends with the code that
// decision gets on a new call (Unauthenticated for an expired or revoked
// token, PermissionDenied, the unavailable code). DefaultStreamRedecide
// (30 s) by default. An interval under MinStreamRedecide (1 s) is a wiring
// mistake. Only the stream interceptor uses it.
func WithStreamRedecide(interval time.Duration) Option {
	return func(c *config) {
		if interval < MinStreamRedecide {
			c.mistakes = append(c.mistakes, fmt.Sprintf("WithStreamRedecide needs an interval of at least %v, got %v", MinStreamRedecide, interval))
			return
		}
		c.redecide = interval
	}
}

// WithLogger sets the logger of the interceptors' one log line: a Func or
// Checker that panicked (at Error, with the method, the panic and its
// stack; never the token). slog.Default() by default; a nil logger is a
// wiring mistake.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.mistakes = append(c.mistakes, "WithLogger was given a nil logger")
			return
		}
		c.logger = l
	}
}

// WithUnavailableCode picks the code of the answer given when no decision
// could be had (the outage answer of middleware.WithUnavailableHandler):
// Unavailable by default; PermissionDenied hides an outage from callers.
// codes.OK is a wiring mistake (it would let the call through), as is a
// code gRPC does not define.
func WithUnavailableCode(code codes.Code) Option {
	return func(c *config) {
		if code == codes.OK || code > codes.Unauthenticated {
			c.mistakes = append(c.mistakes, "WithUnavailableCode needs a code other than OK, one gRPC defines")
			return
		}
		c.unavailable = code
	}
}

// WithClientToken makes the interceptors use the client's own token (set
// with SetToken or SetDPoPToken) instead of forwarding the caller's, as
// middleware.WithClientToken does: calls without authorization metadata are
// then checked too, and a refused or missing client token is the service's
// own outage (the unavailable answer), not the caller's.
func WithClientToken() Option {
	return func(c *config) { c.useClientToken = true }
}

// guard is what both interceptors share.
type guard struct {
	c   Checker
	fn  Func
	cfg config
}

func newGuard(c Checker, fn Func, opts []Option) *guard {
	g := &guard{c: c, fn: fn, cfg: config{unavailable: codes.Unavailable, redecide: DefaultStreamRedecide, now: time.Now, logger: slog.Default()}}
	if safego.IsNil(c) {
		g.cfg.mistakes = append(g.cfg.mistakes, "the Checker is nil")
	}
	if fn == nil {
		g.cfg.mistakes = append(g.cfg.mistakes, "the Func is nil")
	}
	for _, o := range opts {
		if o == nil {
			g.cfg.mistakes = append(g.cfg.mistakes, "an Option is nil")
			continue
		}
		o(&g.cfg)
	}
	if len(g.cfg.mistakes) > 0 {
		panic("grpcpep: " + strings.Join(g.cfg.mistakes, "; "))
	}
	return g
}

// UnaryServerInterceptor returns an interceptor that lets a unary call
// through only when the caller holds every scope fn names for its method,
// answering as the package documentation describes. It is safe for
// concurrent use; it panics on a wiring mistake (a nil c or fn, a nil or
// wrong option).
func UnaryServerInterceptor(c Checker, fn Func, opts ...Option) grpc.UnaryServerInterceptor {
	g := newGuard(c, fn, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if g.cfg.public[info.FullMethod] {
			return handler(ctx, req)
		}
		ctx, err := g.decide(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor returns an interceptor that lets a stream
// through only when the caller holds every scope fn names for its method,
// decided before the handler runs and before any message is read, by the
// gateway past the client's cache (so that the grant's age counts from the
// gateway's decision, not from a cached one of unknown age), and decided
// again once the grant is older than WithStreamRedecide's interval (see
// there). It answers as the package documentation
// describes, is safe for concurrent use, and panics on a wiring mistake.
func StreamServerInterceptor(c Checker, fn Func, opts ...Option) grpc.StreamServerInterceptor {
	g := newGuard(c, fn, opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if g.cfg.public[info.FullMethod] {
			return handler(srv, ss)
		}
		// The grant's lifetime counts from when it was asked of the
		// gateway: a cached decision may already be grantTTL old, and the
		// client's cache does not say how old, so the stream is decided
		// past it (pep.NoCache).
		decided := g.cfg.now()
		ctx, err := g.decide(ss.Context(), info.FullMethod, pep.NoCache())
		if err != nil {
			return err
		}
		ds := newDecidedStream(g, ss, ctx, info.FullMethod, decided)
		defer ds.cancel(nil)
		return handler(srv, ds)
	}
}

// decide asks for the call of fullMethod and returns the handler's context
// (with the decision) or the status error that ends the call. The Func and
// the Checker are the user's code: a panic in either is recovered, logged
// and answered PermissionDenied, so that one call's bug never takes the
// server (grpc-go does not recover) or another call down.
func (g *guard) decide(ctx context.Context, fullMethod string, extra ...pep.CallOption) (_ context.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			// The denial first; the log line is the user's code too,
			// and its own panic is dropped (grpc-go does not recover:
			// it would end the server).
			err = denied
			stack := debug.Stack()
			_ = safego.Call(func() {
				g.cfg.logger.ErrorContext(ctx, "grpcpep: the Func or the Checker panicked; the call is refused with PermissionDenied",
					slog.String("method", fullMethod), slog.String("panic", safego.Text(r)), slog.String("stack", string(stack)))
			})
		}
	}()
	// A call whose caller gave up is never decided, and its handler never
	// runs: its deadline and cancellation are read before the decision,
	// and again before a grant is handed over, since one the client
	// serves from its cache reads neither.
	if err := callerGaveUp(ctx); err != nil {
		return nil, err
	}
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("authorization")
	if len(values) > 1 {
		return nil, status.Error(codes.InvalidArgument, "the call has more than one authorization metadata value")
	}
	callCtx := ctx
	if !g.cfg.useClientToken {
		token, err := middleware.BearerFromValues(values)
		if err != nil {
			return nil, unauthenticated
		}
		callCtx = pep.WithToken(ctx, token)
	}
	resource, scopes := g.fn(fullMethod)
	if !middleware.Checkable(resource, scopes) {
		return nil, denied
	}
	opts := append([]pep.CallOption{pep.WithRequestContext(pep.RequestContext{Method: http.MethodPost, Path: fullMethod})}, extra...)
	// The Checker is handed a copy of what is asked, which the answer is
	// read against (ClassifyAsked): no Checker may rewrite it.
	res, err := g.c.CheckMany(callCtx, []pep.Resource{{Name: resource, Scopes: slices.Clone(scopes)}}, opts...)
	switch middleware.ClassifyAsked(resource, scopes, res, err, g.cfg.useClientToken) {
	case middleware.AnswerGrant:
		if err := callerGaveUp(ctx); err != nil {
			return nil, err
		}
		return context.WithValue(ctx, resultKey{}, res), nil
	case middleware.AnswerUnauthorized:
		return nil, unauthenticated
	case middleware.AnswerUnavailable:
		if err := callerGaveUp(ctx); err != nil {
			return nil, err
		}
		return nil, status.Error(g.cfg.unavailable, "no authorization decision could be had; try again later")
	default:
		return nil, denied
	}
}

// callerGaveUp returns the status of a call whose caller's deadline has
// passed (DeadlineExceeded) or which the caller cancelled (Canceled), else
// nil. A decision that ended with the caller's deadline is the caller's
// timeout, not an outage: answered Unavailable, the code would race the
// client's own timer for the same deadline, and a client that retries
// Unavailable would retry what it gave up on. The deadline is read on the
// clock too, since the context's timer may not have fired yet.
func callerGaveUp(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return status.FromContextError(context.DeadlineExceeded).Err()
	}
	return nil
}

var (
	unauthenticated = status.Error(codes.Unauthenticated, `a valid "authorization: Bearer <token>" metadata value is required`)
	denied          = status.Error(codes.PermissionDenied, "the caller is not allowed to do this")
)

// resultKey is the context key of the decision.
type resultKey struct{}

// DecisionFromContext returns the decision that let the call through (for
// a stream, its first), and false when no interceptor of this package
// decided it (a method of WithPublicMethods, for one).
func DecisionFromContext(ctx context.Context) (pep.Result, bool) {
	res, ok := ctx.Value(resultKey{}).(pep.Result)
	return res, ok
}
