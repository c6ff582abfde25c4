package middleware

import (
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/orgauthz/orgauthz/internal/safego"
)

// WithLogger sets the logger of the middleware's one log line: a user
// callback it calls (the resource, subject or target function, the
// Checker or Evaluator) that panicked, at Error, with the request's method
// and path, the panic and its stack; never the token. slog.Default() by
// default; a nil logger is a wiring mistake.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.mistakes = append(c.mistakes, "WithLogger was given a nil logger")
			return
		}
		c.logger = l
	}
}

// recovered answers a request whose user callback (named by callback)
// panicked with v: the request is refused with the denied answer, no
// decision in its context, so that it fails closed with an answer (net/http
// would only drop the connection, and a router run elsewhere may not
// recover at all), and then the callback's bug is logged at Error. The
// logger is user code too: its own panic is recovered and dropped, so that
// the answer never depends on it. A nil v (no panic) does nothing.
func (c *config) recovered(w http.ResponseWriter, r *http.Request, callback string, v any) {
	if v == nil {
		return
	}
	stack := debug.Stack() // the panicking goroutine's, taken before anything else runs
	c.denied.ServeHTTP(w, r)
	logger := c.logger
	if logger == nil {
		logger = slog.Default()
	}
	_ = safego.Call(func() {
		logger.ErrorContext(r.Context(), "middleware: "+callback+" panicked; the request is refused with the denied answer",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("panic", safego.Text(v)), slog.String("stack", string(stack)))
	})
}
