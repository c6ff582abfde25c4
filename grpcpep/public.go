package grpcpep

// HealthMethods are the full methods of the standard gRPC health service
// (grpc.health.v1.Health: Check, Watch and List), which orchestrators'
// probes call without a token: give them to WithPublicMethods to serve the
// probes.
var HealthMethods = []string{
	"/grpc.health.v1.Health/Check",
	"/grpc.health.v1.Health/Watch",
	"/grpc.health.v1.Health/List",
}

// WithPublicMethods names methods that are served to anyone: for them the
// interceptors read no token and ask for no decision, and the handler runs
// with no decision in its context (DecisionFromContext reports false). It
// is the only way past the interceptors, and it is meant to be read in
// review: each name is an exact full method name
// ("/package.Service/Method"), matched exactly, never as a prefix; a name
// that is not one is a wiring mistake (the interceptor panics, naming it).
// Options given more than once add up. The Func is not asked about a
// public method.
func WithPublicMethods(fullMethods ...string) Option {
	return func(c *config) {
		for _, m := range fullMethods {
			if !isFullMethod(m) {
				c.mistakes = append(c.mistakes, "WithPublicMethods was given "+quote(m)+
					`, which is not a full method name "/package.Service/Method" (exact names only, no prefixes)`)
				continue
			}
			if c.public == nil {
				c.public = map[string]bool{}
			}
			c.public[m] = true
		}
	}
}
