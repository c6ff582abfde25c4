package mockserver

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// maxDrain bounds how much of a request body the server reads and throws
// away so that it can answer a request it refused without reading its body
// (a 401, a 415, the 400 of an oversized body) cleanly. A client that sends
// more loses the connection after the answer.
const maxDrain = 16 << 20

// drainTime bounds how long the server waits for the rest of a body it
// refused: a client that trickles it loses the connection after the
// answer rather than holding the request (and a graceful shutdown) until
// the read timeout.
const drainTime = 2 * time.Second

// readBodyFirst wraps h so that an answer is written only once the
// request's body has been read to its end (at most maxDrain bytes past
// what h read).
//
// A handler that refuses a request without reading its body, or after
// reading only maxBody of it, would otherwise answer and close the
// connection with the rest unread, and the kernel answers unread data with
// a reset that may destroy the answer before the client reads it (RFC 9112
// section 9.6). A reverse proxy writes the whole request before it reads
// the answer, so behind nginx such a 401 became a 502 Bad Gateway. Go's
// server itself discards only up to 256 KiB of an unread body.
//
// A client that sent Expect: 100-continue and whose body no handler
// started to read has not sent it: it is not asked for, and the connection
// is closed after the answer, as Go's server does with a body of its own.
func readBodyFirst(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		expect := r.ProtoAtLeast(1, 1) && ascii.EqualFold(headerValue(r.Header, "Expect"), "100-continue")
		// A body declared longer than maxDrain is never drained: its
		// connection closes after the answer whatever the client sends.
		tooLong := r.ContentLength > maxDrain
		// One allocation for the writer and the body it watches: this
		// runs for every request with a body, decisions included.
		dw := &drainingWriter{ResponseWriter: w, body: watchedBody{ReadCloser: r.Body}, expectContinue: expect, tooLong: tooLong}
		r.Body = &dw.body
		h.ServeHTTP(dw, r)
		dw.drain() // a handler that wrote nothing still gets a 200
	})
}

// watchedBody is a request body that remembers whether it was read, and
// whether to its end.
type watchedBody struct {
	io.ReadCloser
	started bool
	ended   bool // a Read returned io.EOF: there is nothing left to drain
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.started = true
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.ended = true
	}
	return n, err
}

// drainingWriter reads the rest of the request body before the answer's
// header is written.
type drainingWriter struct {
	http.ResponseWriter
	body           watchedBody
	expectContinue bool
	tooLong        bool
	drained        bool
}

// drain reads the rest of the body, once, for at most drainTime. When the
// body is longer than maxDrain, or cannot be read to its end in time (a
// trickling client, a malformed chunk), the answer says the connection
// closes.
func (w *drainingWriter) drain() {
	if w.drained {
		return
	}
	w.drained = true
	if w.tooLong || (w.expectContinue && !w.body.started) {
		// A body the server would never read whole, or one it never asked
		// for: Go's server would otherwise try to discard it, since r.Body
		// is no longer its own and it cannot tell.
		w.Header().Set("Connection", "close")
		return
	}
	if w.body.ended {
		// The handler read the body to its end, as every decision does:
		// draining would read nothing and find io.EOF again, so it need
		// not arm a read deadline for it.
		return
	}
	// Not every writer has a connection (a test's recorder): then the
	// server's own read timeout is the only bound.
	rc := http.NewResponseController(w.ResponseWriter)
	_ = rc.SetReadDeadline(time.Now().Add(drainTime))
	_, err := io.CopyN(io.Discard, w.body.ReadCloser, maxDrain)
	if err == nil || (!errors.Is(err, io.EOF) && !errors.Is(err, http.ErrBodyReadAfterClose)) {
		w.Header().Set("Connection", "close")
	}
}

func (w *drainingWriter) WriteHeader(code int) {
	if code >= 200 { // an informational answer is no answer yet
		w.drain()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *drainingWriter) Write(p []byte) (int, error) {
	w.drain()
	return w.ResponseWriter.Write(p)
}

// Flush drains before it sends what was written.
func (w *drainingWriter) Flush() {
	w.drain()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *drainingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
