package redisstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/orgauthz/orgauthz/internal/safego"
)

// errPanicked is the error of a command whose Redis client (or one of its
// hooks) panicked.
var errPanicked = errors.New("redisstore: the Redis client panicked")

// bounded runs cmd, which sends Redis commands under ctx, and returns its
// error, or ctx's once ctx is done, whichever comes first: go-redis honours
// a context's deadline only when the client was made with
// ContextTimeoutEnabled, and otherwise waits for its ReadTimeout (3 s by
// default, more when Redis is frozen and the client retries). cmd runs on
// a goroutine of its own, which ends when go-redis gives up; what it
// writes must not be read unless bounded returned its error, and it must
// not use the caller's memory that the caller may change after bounded
// returns.
func bounded(ctx context.Context, cmd func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		// cmd runs the Redis client the user gave, with its hooks, on a
		// goroutine of the store's own (safego): a panic there would end
		// the process. It fails the command instead.
		err := errPanicked
		defer func() { done <- err }()
		if safego.Call(func() { err = cmd() }) != nil {
			err = errPanicked
		}
	}()
	select {
	case err := <-done:
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
				// A client made with ContextTimeoutEnabled puts ctx's
				// deadline on the connection, and the network poller can
				// see it pass before ctx's own timer fires: it was ctx's.
				return fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
			}
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
