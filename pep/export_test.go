package pep

import "time"

// Test seams, visible only to this package's tests.

// WithClock makes the client read time (cache expiry, breaker cool-down,
// event times) from now.
func WithClock(now func() time.Time) Option {
	return option(func(c *config) { c.Now = now })
}

// WithFlightWaitHook calls f each time a caller starts waiting for a
// gateway request, its own or a coalesced one.
func WithFlightWaitHook(f func()) Option {
	return option(func(c *config) { c.FlightWait = f })
}
