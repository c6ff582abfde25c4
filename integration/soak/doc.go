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
// least 90 % of their pairs (each user's first lookup, which no cache can
// answer, left out) while every junk token was refused, and that
// goroutines and heap return to their baseline.
//
// It runs for 3 s in every run of the README's test command; run it longer with
//
//	go test ./integration/soak -run TestSoak -timeout 40m -v -soak.duration 20m -soak.users 10000
//
// (-soak.workers changes the number of concurrent writers, 16 by default;
// -soak.users the size of the realm, 10,000 by default). RELIABILITY.md
// records the long run's figures.
//
// TestReplicasSoak is the long form of redisstore's TestReplicasBehindAFront
// (issue 24): three replicas of a service behind a round-robin front, each
// with its own pep.Client (purges shared through one Redis) and
// dpop.Verifier (replay checks in a second Redis, HMAC nonces under one
// secret), under steady traffic from 32 users; a token revoked at the
// reference server and purged on a random replica every 100 ms, accepted
// proofs replayed to the other replicas, the purges' Redis restarted. It
// checks that no replay is accepted and no revoked token is granted later
// than Purge's return plus the propagation bound, and reports throughput,
// purge propagation and how long each restart kept the caches bypassed.
// It runs for 5 s in every run (at least 5 s, whatever -soak.duration says,
// with one restart a quarter of the way); run it longer with
//
//	go test ./integration/soak -run TestReplicasSoak -timeout 20m -v -soak.duration 5m -soak.redis-restart 30s
package soak
