// Package faults holds the fault-injection tests and nothing else:
// pep clients talk to the reference server through Toxiproxy (its server run
// in process as a Go library, proxies on 127.0.0.1 only), and the tests
// check the fail-closed rules of pep under each toxic, upstream and
// downstream: no GRANT the gateway would not give, no call later than its
// deadline plus 50 ms, a Cause matching pep.ErrUnavailable for every denial
// a fault caused, a breaker that opens and closes after one probe once the
// fault is gone, nothing cached that a fault made, and no goroutine left.
// A second test stops the gateway and starts it again on the same address
// in the middle of a run.
//
//	go test -race ./integration/faults -v   # prints the toxic × call × outcome table
package faults
