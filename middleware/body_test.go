package middleware_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// unreadBody is a request body that records whether anything read it.
type unreadBody struct {
	io.Reader
	read bool
}

func (b *unreadBody) Read(p []byte) (int, error) {
	b.read = true
	return b.Reader.Read(p)
}

func (b *unreadBody) Close() error { return nil }

// noChecker fails the test if the middleware asks it anything.
type noChecker struct{ t *testing.T }

func (c noChecker) CheckMany(context.Context, []pep.Resource, ...pep.CallOption) (pep.Result, error) {
	c.t.Error("the middleware asked for a decision")
	return pep.Result{}, pep.ErrUnavailable
}

func (c noChecker) Evaluate(context.Context, authzen.Request, ...authzen.CallOption) (authzen.Decision, error) {
	c.t.Error("the middleware asked for a decision")
	return authzen.Decision{}, authzen.ErrUnavailable
}

// TestBodyOfARequestWithoutATokenIsNotRead: a form body is read (for a
// _method override) only once the caller's token has been read. The
// middleware used to read, and size by the Content-Length the client
// declared, the body of a request that carried no token at all: headers
// declaring 10 MB, and no body byte, held 10 MB each until the server's
// read timeout.
func TestBodyOfARequestWithoutATokenIsNotRead(t *testing.T) {
	t.Parallel()
	guards := map[string]http.Handler{
		"Require": middleware.Require(noChecker{t}, "orders", "write")(okHandler()),
		"RequireAuthZEN": middleware.RequireAuthZEN(noChecker{t}, bearerSubject,
			func(*http.Request) (authzen.Action, authzen.Resource) {
				return authzen.Action{Name: "write"}, authzen.Resource{Type: "order", ID: "42"}
			})(okHandler()),
	}
	for name, h := range guards {
		for _, auth := range []string{"", "Basic dTpw", "Bearer"} {
			t.Run(name+"/"+auth, func(t *testing.T) {
				body := &unreadBody{Reader: strings.NewReader("_method=DELETE&a=1")}
				req := httptest.NewRequest(http.MethodPost, "/orders/42", nil)
				req.Body, req.ContentLength = body, 10<<20
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				require.Equal(t, http.StatusUnauthorized, rec.Code)
				require.False(t, body.read, "the body of a request without a token was read")
			})
		}
	}
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
}

// bearerSubject names the caller by its Bearer token, as an upstream
// authentication would by the token's verified subject.
func bearerSubject(r *http.Request) (authzen.Subject, error) {
	token, err := middleware.BearerToken(r)
	return authzen.Subject{Type: "user", ID: token}, err
}
