// Package gatewaytest runs an http.Handler (the reference server) on a fixed
// loopback address that a test can stop and start again, to play a gateway
// restart: clients keep the same URL, the listener goes away, and a new
// listener on the same address serves the same handler (and so the same
// state) afterwards.
package gatewaytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Server is a restartable loopback server. Its methods are safe for
// concurrent use.
type Server struct {
	// Addr is the host:port the server listens on, the same after every
	// restart.
	Addr string
	// URL is "http://" + Addr.
	URL string

	mu      sync.Mutex
	handler http.Handler
	hs      *http.Server
	served  chan struct{} // closed when the running Serve returns
}

// Listen reserves a loopback address (127.0.0.1, a free port) for a server
// that Serve starts later; the URL is known before the handler exists (the
// reference server's issuer must name it). The test's cleanup closes the
// server.
func Listen(t testing.TB) (*Server, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gatewaytest: listen: %v", err)
	}
	s := &Server{Addr: ln.Addr().String()}
	s.URL = "http://" + s.Addr
	t.Cleanup(s.Close)
	return s, ln
}

// Serve serves h on ln (from Listen) until Stop or Close.
func (s *Server) Serve(ln net.Listener, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
	s.serveLocked(ln)
}

func (s *Server) serveLocked(ln net.Listener) {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // toxics make it talk
	}
	served := make(chan struct{})
	s.hs, s.served = hs, served
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
}

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

// Close stops the server at once, closing every connection.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hs == nil {
		return
	}
	_ = s.hs.Close()
	<-s.served
	s.hs = nil
}
