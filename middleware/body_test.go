package middleware_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
}

// bearerSubject names the caller by its Bearer token, as an upstream
// authentication would by the token's verified subject.
func bearerSubject(r *http.Request) (authzen.Subject, error) {
	token, err := middleware.BearerToken(r)
	return authzen.Subject{Type: "user", ID: token}, err
}

// countedBody is a request body of size bytes, a urlencoded form of
// filler pairs that ends in tail, made as it is read; it counts the bytes
// read from it.
type countedBody struct {
	size, read int64
	tail       string
}

func (b *countedBody) Read(p []byte) (int, error) {
	const filler = "a=bbbbbbbb&"
	if b.read >= b.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && b.read < b.size {
		if tailAt := b.size - int64(len(b.tail)); b.read >= tailAt {
			p[n] = b.tail[b.read-tailAt]
		} else {
			p[n] = filler[b.read%int64(len(filler))]
		}
		n++
		b.read++
	}
	return n, nil
}

func (*countedBody) Close() error { return nil }

// askRecorder is a Checker and an Evaluator that records how many body
// bytes had been read when it was asked, and refuses the token as the
// gateway refuses one nobody issued.
type askRecorder struct {
	body      *countedBody
	asked     bool
	readAtAsk int64
}

func (a *askRecorder) record() { a.asked, a.readAtAsk = true, a.body.read }

func (a *askRecorder) CheckMany(context.Context, []pep.Resource, ...pep.CallOption) (pep.Result, error) {
	a.record()
	return pep.Result{}, pep.ErrUnauthorized
}

func (a *askRecorder) Evaluate(context.Context, authzen.Request, ...authzen.CallOption) (authzen.Decision, error) {
	a.record()
	return authzen.Decision{}, authzen.ErrUnavailable
}

// TestFormBodyIsNotReadBeforeTheDecision: nothing after the headers is
// read before the decision unless the service opted in. Without
// WithMethodOverride trusting _method, a urlencoded POST body (10 MB here,
// with _method at its end) has no byte read when the gateway is asked:
// not with a token nobody issued (whose grammar is all the middleware can
// check), not with WithClientToken and no credential at all, not under
// RequireAuthZEN. The middleware used to read and buffer it whole (52 MB
// allocated by doubling) before asking.
//
// The rows TestBodyOfARequestWithoutATokenIsNotRead: a request with no
// token (no Authorization, another scheme, a bare "Bearer") is 401 with
// no byte of its body read and nothing asked, whatever it declares. The
// middleware used to read, and size by the Content-Length the client
// declared, the body of such a request: headers declaring 10 MB, and no
// body byte, held 10 MB each until the server's read timeout.
func TestFormBodyIsNotReadBeforeTheDecision(t *testing.T) {
	t.Parallel()
	target := func(*http.Request) (authzen.Action, authzen.Resource) {
		return authzen.Action{Name: "write"}, authzen.Resource{Type: "order", ID: "42"}
	}
	type row struct {
		name    string
		guard   func(*askRecorder) http.Handler
		auth    string
		noToken bool // 401, nothing asked
	}
	rows := []row{
		{name: "a token nobody issued", guard: func(a *askRecorder) http.Handler {
			return middleware.Require(a, "orders", "write")(okHandler())
		}, auth: "Bearer never-issued-by-anyone"},
		{name: "WithClientToken, no credential", guard: func(a *askRecorder) http.Handler {
			return middleware.Require(a, "orders", "write").With(middleware.WithClientToken())(okHandler())
		}},
		{name: "WithMethodOverride of a header only", guard: func(a *askRecorder) http.Handler {
			return middleware.Require(a, "orders", "write").With(middleware.WithMethodOverride("X-HTTP-Method-Override"))(okHandler())
		}, auth: "Bearer never-issued-by-anyone"},
		{name: "RequireAuthZEN", guard: func(a *askRecorder) http.Handler {
			return middleware.RequireAuthZEN(a, bearerSubject, target)(okHandler())
		}, auth: "Bearer never-issued-by-anyone"},
	}
	for _, auth := range []string{"", "Basic dTpw", "Bearer"} {
		rows = append(rows, row{"TestBodyOfARequestWithoutATokenIsNotRead Require " + auth, rows[0].guard, auth, true},
			row{"TestBodyOfARequestWithoutATokenIsNotRead RequireAuthZEN " + auth, rows[3].guard, auth, true})
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := &countedBody{size: 10 << 20, tail: "&_method=DELETE"}
			a := &askRecorder{body: body}
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", nil)
			req.Body, req.ContentLength = body, body.size
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			tc.guard(a).ServeHTTP(rec, req)
			if tc.noToken {
				require.Equal(t, http.StatusUnauthorized, rec.Code)
				require.False(t, a.asked, "the gateway was asked")
				require.Zero(t, body.read, "the body of a request without a token was read")
				return
			}
			require.True(t, a.asked, "the gateway was asked")
			require.Zero(t, a.readAtAsk, "body bytes read before the gateway was asked")
		})
	}
}

// TestTrustedFormBodyReadBeforeTheDecisionIsBounded: with _method trusted
// the method the body names is part of the question, so the body is read
// before the decision, but only once the caller's token has been read and
// only up to 64 KiB: a larger body is 413, saying the bound and the
// option, after at most the bound and the one byte that shows it larger,
// and nothing is checked; so is one larger than the http.MaxBytesReader an
// outer handler set, saying so (TestFormBodyTooLarge). Never a 500. A body
// at the bound is read and its _method checked.
func TestTrustedFormBodyReadBeforeTheDecisionIsBounded(t *testing.T) {
	t.Parallel()
	const bound = 64 << 10
	for _, tc := range []struct {
		name   string
		auth   string
		size   int64
		status int
		asked  bool
		read   int64 // at most, before the gateway was asked or the answer
		outer  int64 // the bound of an outer handler's http.MaxBytesReader, if any
	}{
		{"10 MB", "Bearer never-issued-by-anyone", 10 << 20, http.StatusRequestEntityTooLarge, false, bound + 1, 0},
		{"one byte over the bound", "Bearer never-issued-by-anyone", bound + 1, http.StatusRequestEntityTooLarge, false, bound + 1, 0},
		{"at the bound", "Bearer never-issued-by-anyone", bound, http.StatusUnauthorized, true, bound, 0},
		{"not a token", "Bearer not a token", 10 << 20, http.StatusUnauthorized, false, 0, 0},
		{"no token", "", 10 << 20, http.StatusUnauthorized, false, 0, 0},
		{"TestFormBodyTooLarge over an outer bound", "Bearer never-issued-by-anyone", 2 << 10, http.StatusRequestEntityTooLarge, false, 1<<10 + 1, 1 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := &countedBody{size: tc.size, tail: "&_method=PUT"}
			a := &askRecorder{body: body}
			var checkedAs string
			byMethod := func(r *http.Request) (string, []string) {
				checkedAs = r.Method
				return "orders", []string{"write"}
			}
			h := middleware.RequireFunc(a, byMethod, middleware.WithMethodOverride("_method"))(okHandler())
			if inner := h; tc.outer > 0 {
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					r.Body = http.MaxBytesReader(w, r.Body, tc.outer)
					inner.ServeHTTP(w, r)
				})
			}
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", nil)
			req.Body, req.ContentLength = body, body.size
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			require.Equal(t, tc.asked, a.asked, "the gateway was asked")
			if tc.asked {
				require.Equal(t, http.MethodPut, checkedAs, "the trusted _method was checked")
				require.LessOrEqual(t, a.readAtAsk, tc.read, "body bytes read before the gateway was asked")
				return
			}
			require.LessOrEqual(t, body.read, tc.read, "body bytes read before the answer")
			if tc.status == http.StatusRequestEntityTooLarge {
				name, message := errorBody(t, rec.Body.String())
				require.Equal(t, "Request Entity Too Large", name)
				if tc.outer > 0 {
					require.Contains(t, message, "larger than this service accepts")
					return
				}
				require.Contains(t, message, "64 KiB")
				require.Contains(t, message, "WithMethodOverride")
			}
		})
	}
}
