package authzen

// Test seams, visible only to this package's tests.

// WithFlightWaitHook calls f each time a caller starts waiting for a PDP
// request, its own or a coalesced one.
func WithFlightWaitHook(f func()) Option {
	return option(func(c *config) { c.FlightWait = f })
}
