package grpcpep

import "time"

// WithClock makes the interceptors time a stream's grant on now instead of
// time.Now, so that a test moves past WithStreamRedecide's interval
// without waiting for it.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}
