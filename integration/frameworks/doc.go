// Package frameworks holds the tested examples of the README's section on
// routers that take net/http middleware as it is: chi and connect-go. Its
// tests run package middleware on each framework's own router over
// loopback, chi on the table of hostile callers every adapter shares
// (internal/adaptertest). It lives in the integration module so that
// neither framework enters the library's go.mod.
package frameworks
