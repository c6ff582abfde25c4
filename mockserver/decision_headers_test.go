package mockserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inPlaceEditor is a middleware's ResponseWriter that, as the answer's
// header is written, edits header values in place (a charset appended to
// Content-Type, a Content-Length of its own): nothing in net/http's
// Header contract forbids writing a value of the slice a handler set.
type inPlaceEditor struct {
	http.ResponseWriter
	wrote bool
}

func (w *inPlaceEditor) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		h := w.Header()
		if v := h["Content-Type"]; len(v) == 1 {
			v[0] += "; charset=utf-8"
		}
		if v := h["Content-Length"]; len(v) == 1 {
			n, _ := strconv.Atoi(v[0])
			v[0] = strconv.Itoa(n + 5) // say it pads the body
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *inPlaceEditor) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// TestDecisionHeaderValuesAreEachAnswersOwn: a decision's Content-Type
// and Content-Length values are slices of the answer's own, so that a
// middleware around one Server that edits a header value in place (which
// net/http's Header contract allows) changes nothing of another answer.
// The attack on the first fast path found them shared by every answer of
// every Server in the process: a wrong Content-Length for other callers,
// a Content-Type that grew on every call.
func TestDecisionHeaderValuesAreEachAnswersOwn(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	newSrv := func() (http.Handler, string) {
		s := mustNew(t, WithFixture(attackFixture()), WithIssuer("http://srv.test"), WithClock(func() time.Time { return now }), es256Tokens)
		tok := mustIssue(t, s, "acme", "alice")
		return s.withCORS(readBodyFirst(s.routes())), tok
	}
	// Its own Content-Length, so that no earlier test's edit is seen.
	body := `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","wri` + "te" + `"]},{"name":"orders","scopes":["read"]}],"context":{}}`
	decide := func(h http.Handler, tok string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "http://srv.test/realms/acme/authorization-decision-provider/authorize", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	victim, victimTok := newSrv()
	before := decide(victim, victimTok)
	require.Equal(t, 200, before.Code)
	require.Equal(t, "application/json", before.Header().Get("Content-Type"))
	require.Equal(t, strconv.Itoa(before.Body.Len()), before.Header().Get("Content-Length"))

	// Another embedder, another Server, its own middleware.
	other, otherTok := newSrv()
	edited := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.ServeHTTP(&inPlaceEditor{ResponseWriter: w}, r)
	})
	for range 3 {
		_ = decide(edited, otherTok)
	}

	after := decide(victim, victimTok)
	require.Equal(t, 200, after.Code)
	got, _ := io.ReadAll(after.Body)
	assert.Equal(t, "application/json", after.Header().Get("Content-Type"),
		"another Server's middleware changed this Server's decision Content-Type")
	assert.Equal(t, strconv.Itoa(len(got)), after.Header().Get("Content-Length"),
		"another Server's middleware changed this Server's decision Content-Length")
}
