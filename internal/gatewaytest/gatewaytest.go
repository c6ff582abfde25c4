// Package gatewaytest is the tests' one stand-in gateway: an HTTP server on
// a loopback address (127.0.0.1 only) that lives until the test ends. It is
// imported by tests only.
//
// It serves in two ways:
//
//   - Start serves a handler of the test, for the faults no real gateway
//     makes on demand: it counts requests, records their Authorization
//     headers (WithAuthorizations), reads every request body before the
//     handler runs (the handler may still read it), and can hold a request
//     until the client gives up or the test ends (Hold). Answer and Raw are
//     the canned answers; WithTLS serves HTTPS.
//   - Listen and Serve run a real handler (the reference server) as it is,
//     on an address known before the handler exists, that a test can Stop
//     and Restart to play a gateway restart: clients keep the same URL,
//     the listener goes away, and a new listener on the same address serves
//     the same handler (and so the same state) afterwards.
//
// Every request's context ends when its client gives up or when the server
// closes, so no handler outlives the test. ErrorPanicTracerProvider is the
// one user tracing SDK with a bug on its error path that the clients'
// tests hand them.
package gatewaytest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a loopback server. Its methods are safe for concurrent use.
type Server struct {
	// Addr is the host:port the server listens on, the same after every
	// restart.
	Addr string
	// URL is "http://" + Addr, or "https://" + Addr WithTLS.
	URL string

	tls    *tls.Config // nil: plain HTTP
	client *http.Client

	// closing ends every request's context when the server closes, so
	// that handlers holding a request let go of it.
	closing  context.Context
	close    context.CancelFunc
	hmu      sync.Mutex // orders handlers.Add before handlers.Wait
	closed   bool
	handlers sync.WaitGroup

	requests    atomic.Int64
	recordAuths bool
	authMu      sync.Mutex
	auths       [][]string

	mu      sync.Mutex
	handler http.Handler
	hs      *http.Server
	served  chan struct{} // closed when the running Serve returns
}

// Option configures a Server.
type Option func(*Server)

// WithTLS serves HTTPS with a certificate for 127.0.0.1 that only the
// server's Client trusts.
func WithTLS() Option {
	return func(s *Server) { s.tls = serverTLS() }
}

// WithAuthorizations records the Authorization header of every request
// that reaches a server made by Start (Authorizations). It is off by
// default: a test that measures the heap must not count the records.
func WithAuthorizations() Option {
	return func(s *Server) { s.recordAuths = true }
}

// Listen reserves a loopback address (127.0.0.1, a free port) for a server
// that Serve starts later; the URL is known before the handler exists (the
// reference server's issuer must name it). The test's cleanup closes the
// server.
func Listen(t testing.TB, opts ...Option) (*Server, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gatewaytest: listen: %v", err)
	}
	s := &Server{Addr: ln.Addr().String()}
	for _, o := range opts {
		o(s)
	}
	s.closing, s.close = context.WithCancel(context.Background())
	tr := &http.Transport{}
	s.URL = "http://" + s.Addr
	if s.tls != nil {
		s.URL = "https://" + s.Addr
		tr.TLSClientConfig = clientTLS()
	}
	s.client = &http.Client{Transport: tr}
	t.Cleanup(s.Close)
	return s, ln
}

// Serve serves h on ln (from Listen) as it is, until Stop or Close.
func (s *Server) Serve(ln net.Listener, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
	s.serveLocked(ln)
}

func (s *Server) serveLocked(ln net.Listener) {
	h := s.handler
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !s.enter() {
				return // closing: the connection goes with the server
			}
			defer s.handlers.Done()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // toxics and hostile answers make it talk
		BaseContext:       func(net.Listener) context.Context { return s.closing },
	}
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	served := make(chan struct{})
	s.hs, s.served = hs, served
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
}

// enter counts a handler in, unless the server is closing.
func (s *Server) enter() bool {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// Client returns an HTTP client for the server: it trusts the server's
// certificate WithTLS, and its idle connections close with the server.
func (s *Server) Client() *http.Client { return s.client }

// Stop stops the server gracefully: the listener closes at once (new
// connections are refused), requests already read are answered, then the
// connections close. If ctx ends first the remaining connections are
// closed at once. Stop returns when the server's goroutine has ended; a
// stopped server is a no-op to stop again.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hs == nil {
		return nil
	}
	err := s.hs.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.hs.Close())
	}
	<-s.served
	s.hs = nil
	return err
}

// Restart listens on Addr again and serves the same handler. The port was
// free a moment ago, but another process may take it in between or the
// kernel may be slow to release it: Restart tries every 10 ms, 200 times
// at most (2 s), then gives up with the last error.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hs != nil {
		return errors.New("gatewaytest: restart of a running server")
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var err error
	for range 200 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", s.Addr); err == nil {
			s.serveLocked(ln)
			return nil
		}
		<-tick.C
	}
	return fmt.Errorf("gatewaytest: listen again on %s: %w", s.Addr, err)
}

// Close stops the server at once: it closes every connection, ends every
// request's context, and returns when every handler has returned; then it
// closes the idle connections of Client and of http.DefaultTransport. The
// test's cleanup calls it; a closed server is a no-op to close again.
func (s *Server) Close() {
	s.mu.Lock()
	if s.hs != nil {
		_ = s.hs.Close()
		<-s.served
		s.hs = nil
	}
	s.mu.Unlock()
	s.close()
	s.hmu.Lock()
	s.closed = true
	s.hmu.Unlock()
	s.handlers.Wait()
	s.client.CloseIdleConnections()
	// Clients of the default transport keep idle connections too; as
	// httptest does, close them so that no reader goroutine outlives the
	// test.
	if tr, ok := http.DefaultTransport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
}
