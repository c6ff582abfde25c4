// Package soak holds the soak test and nothing else: TestSoak runs
// many concurrent callers against the reference server on loopback, in a
// realm of 10,000 users:
//
//   - writers of the organization API with the realm admin's token, who also
//     call get-organizations through pep clients with user tokens;
//   - a noisy second tenant, writing to its own realm;
//   - legitimate services, pep clients with a cache, asking for decisions
//     with the tokens of the realm's active users;
//   - junk callers, whose tokens (garbage, forged, expired, another realm's)
//     the gateway refuses with a 401;
//
// and, half-way through, stops the gateway and starts it again on the same
// address. It then checks that every acknowledged write is in the final
// state and nothing else is (each writer models what it did), that no
// request got a 5xx, that no decision was a GRANT the policy does not give,
// that a call failed only in the restart's gap and every client recovered
// without being rebuilt, that the legitimate callers' cache answered at
// least 90 % of their pairs while every junk token was refused, and that
// goroutines and heap return to their baseline.
//
// It runs for 3 s in every run of the README's test command; run it longer with
//
//	go test ./integration/soak -run TestSoak -timeout 40m -v -soak.duration 20m -soak.users 10000
//
// (-soak.workers changes the number of concurrent writers, 16 by default;
// -soak.users the size of the realm, 10,000 by default). RELIABILITY.md
// records the long run's figures.
package soak
