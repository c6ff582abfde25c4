// Package soak holds the module's soak test and nothing else: TestSoak runs
// many concurrent clients against the reference server on loopback (the
// organization API with an admin token, decisions and get-organizations
// through pep clients with user tokens), then checks that every
// acknowledged write is in the final state, that no request got a 5xx, and
// that goroutines and heap return to their baseline.
//
// It runs for 3 s in every `go test ./...`; run it longer with
//
//	go test ./soak -run TestSoak -soak.duration 5m -v
//
// (-soak.workers changes the number of concurrent clients, 16 by default).
package soak
