package grpcpep

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/orgauthz/orgauthz/pep"
)

// decidedStream is a stream whose context carries the decision and whose
// grant has a lifetime (config.redecide): a message sent or received after
// it waits for a new decision, and the first refusal ends the stream.
type decidedStream struct {
	grpc.ServerStream
	g          *guard
	fullMethod string
	// ctx is the handler's context: the decision, and cancelled with the
	// refusal as cause when a new decision refuses the stream.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// mu serialises the re-decisions of the stream's sender and receiver
	// (grpc allows one of each at a time).
	mu sync.Mutex
	// decided is when the last grant was asked for, by the guard's clock
	// (time.Now, with its monotonic reading).
	decided time.Time
	// refused is the status error of the first refusal; every later
	// message gets it.
	refused error
}

func newDecidedStream(g *guard, ss grpc.ServerStream, ctx context.Context, fullMethod string, decided time.Time) *decidedStream {
	ctx, cancel := context.WithCancelCause(ctx)
	return &decidedStream{ServerStream: ss, g: g, fullMethod: fullMethod, ctx: ctx, cancel: cancel, decided: decided}
}

// Context returns the stream's context with the decision.
func (s *decidedStream) Context() context.Context { return s.ctx }

// SendMsg sends m if the stream's grant is still current, deciding it again
// first when it is too old.
func (s *decidedStream) SendMsg(m any) error {
	if err := s.current(); err != nil {
		return err
	}
	return s.ServerStream.SendMsg(m)
}

// RecvMsg receives m and hands it over only if the stream's grant is still
// current when it arrived, deciding it again when it is too old.
func (s *decidedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.current()
}

// current returns nil while the stream's grant lasts, deciding it again
// (past the client's cache) once it is older than the interval, and the
// refusal's status error from the first refusal on.
func (s *decidedStream) current() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused != nil {
		return s.refused
	}
	if s.g.cfg.now().Sub(s.decided) < s.g.cfg.redecide {
		return nil
	}
	asked := s.g.cfg.now()
	if _, err := s.g.decide(s.ServerStream.Context(), s.fullMethod, pep.NoCache()); err != nil {
		s.refused = err
		s.cancel(err)
		return err
	}
	s.decided = asked
	return nil
}
