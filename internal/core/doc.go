// Package core is the client core that the decision clients, pep and
// authzen, are built on. Each client keeps its wire format, its public
// types and its one-line options; the core owns what they have in common:
//
//   - the settings, their defaults and their validation (Settings);
//   - the client's own token and its lifecycle: set, cleared, refused by a
//     401, the calls still under way with it stopped, its cached decisions
//     purged, the events emitted once no lock is held (token.go);
//   - the call wrapper: the call's token and deadline, the credential that
//     carries it, the request sent through the breaker, retries and
//     transport and shared with identical concurrent ones, the 401 handled
//     (call.go);
//   - the decision cache, grouped by token (cache.go), whose tokens are
//     retired by what they are, every spelling of one together
//     (identity.go);
//   - the counters behind Stats and the metrics, and the log lines of
//     fail-closed decisions (core.go: Tally, Record).
//
// A client embeds a Core, sets it up once in its New (Init) and calls it;
// the core never calls back into a client, and knows neither wire format.
package core
