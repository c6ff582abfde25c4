package authzen_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
)

// panicAfter is a user's RoundTripper that lets its first request through
// to next, then panics with errTransportBug.
type panicAfter struct {
	next http.RoundTripper
	sent chan struct{}
}

var errTransportBug = errors.New("a transient bug in the user's transport")

func (p *panicAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	select {
	case p.sent <- struct{}{}:
		return p.next.RoundTrip(r)
	default:
		panic(errTransportBug)
	}
}

// A panic under one chunk of an Evaluations past the batch size, on a
// goroutine of the client's own, reaches the caller's goroutine with the
// transport's own value once the other chunks have ended, as for a call
// of one chunk: it does not end the process (it used to).
func TestEvaluationsChunkPanicReachesTheCaller(t *testing.T) {
	t.Parallel()
	srv, _ := startTodo(t)
	c := mustAuthZEN(t, srv.URL+"/realms/todo", authzen.WithBatchSize(1), authzen.WithHTTPClient(&http.Client{
		Transport: &panicAfter{next: srv.Client().Transport, sent: make(chan struct{}, 1)}}))
	c.SetToken(srv.Token("todo", "service-account-todo-api"))
	items := []authzen.Request{
		{Resource: authzen.Resource{Type: "todo", ID: "1"}},
		{Resource: authzen.Resource{Type: "todo", ID: "2"}},
		{Resource: authzen.Resource{Type: "todo", ID: "3"}},
	}
	require.PanicsWithValue(t, errTransportBug, func() {
		_, _ = c.Evaluations(t.Context(), req, items)
	})
}
