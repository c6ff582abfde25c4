// Package hangguard makes the clients of the tests (NewPep, NewAuthZEN) and
// checks, in a package's test source, that every client its tests make
// comes from them or another helper of the guard, which bounds the
// client's calls by a long timeout (a hang guard) instead of the clients'
// production default of 2 s. A clean call beside the rest of the suite
// under -race on a loaded machine can take longer than 2 s; it then fails
// closed (a DENY whose Cause is ErrUnavailable, and a nil error) in a test
// about something else. Added client by client, the guard was missed and
// lost in merges; checked here, a test client without it fails
// TestTestClientsHaveAHangGuard, whose table names every package's tests
// (nested modules' included), at the line that made it. CheckSupport does the same
// for a test-support package (adaptertest) whose exported helpers make the
// clients of other packages' tests, and Timeout is the guard every helper
// gives. It is imported by tests and test-support packages only.
package hangguard
