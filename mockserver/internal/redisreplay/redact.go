package redisreplay

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// This file keeps the -redis URL's password out of every error and log
// line, by one rule: nothing of the URL's text is printed unless parsing
// has checked it to be a host or a database number. An error names its
// problem only (a urlProblem, which is a constant), never a piece of the
// URL, because the pieces url.Parse reports cannot be trusted: in
// redis://password@host, a password holding '?', '#' or '/' makes url.Parse
// take the password for the host and the rest for a query, fragment or
// path. The log's form of a URL (Redacted) is rebuilt from the checked
// pieces of a URL that Open accepts, and is only the problem otherwise.

// urlProblem is what is wrong with a -redis URL: always one of the
// constants below, so that an error can hold nothing the user wrote.
type urlProblem string

// The problems of a -redis URL.
const (
	problemTLS = urlProblem("rediss (TLS) is not supported by the reference server; " +
		"reach Redis on a private network or through a TLS tunnel")
	problemScheme   = urlProblem("the scheme must be redis://")
	problemHost     = urlProblem("the host is missing (redis://host:6379)")
	problemQuery    = urlProblem("a query or fragment is not supported" + escapeHint)
	problemDatabase = urlProblem("the path must be a database number" + escapeHint)
	problemEscape   = urlProblem("an invalid %-escape (write a % in the password as %25)")
	problemHostChar = urlProblem("an invalid character in the host")
	problemPort     = urlProblem("an invalid port" + escapeHint)
	problemParse    = urlProblem("it does not parse")
)

// escapeHint ends the problems a password holding '/', '?' or '#' causes.
const escapeHint = " (escape a '/', '?' or '#' in the password: %2F, %3F, %23)"

// Error implements error.
func (p urlProblem) Error() string { return "redis URL: " + string(p) }

// parseProblems are url.Parse's messages that quote nothing of their
// input, by the start of the message: the message is printed as it stands
// in this list, never as url.Parse wrote it.
var parseProblems = []urlProblem{
	"missing protocol scheme",
	"first path segment in URL cannot contain colon",
	"missing ']' in host",
	"invalid userinfo",
	"net/url: invalid control character in URL",
}

// endpoint is a -redis URL's checked pieces.
type endpoint struct {
	host, port         string // the port is 6379 when the URL names none
	username, password string
	hasUser            bool // the URL holds user information
	db                 int
}

// parseURL checks rawURL, redis://[[user]:password@]host[:port][/db], and
// returns its pieces. Its error is a urlProblem.
func parseURL(rawURL string) (endpoint, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return endpoint{}, parseProblem(err)
	}
	switch {
	case u.Scheme == "rediss":
		return endpoint{}, problemTLS
	case u.Scheme != "redis" || u.Opaque != "":
		return endpoint{}, problemScheme
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return endpoint{}, problemQuery
	case u.Hostname() == "":
		return endpoint{}, problemHost
	}
	ep := endpoint{host: u.Hostname(), port: u.Port()}
	if ep.port == "" {
		ep.port = "6379"
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if ep.db, err = strconv.Atoi(p); err != nil || ep.db < 0 {
			return endpoint{}, problemDatabase
		}
	}
	if u.User != nil {
		ep.hasUser = true
		ep.username = u.User.Username()
		ep.password, _ = u.User.Password()
		if ep.password == "" { // redis://password@host
			ep.username, ep.password = "", ep.username
		}
	}
	return ep, nil
}

// addr is the endpoint's host:port.
func (ep endpoint) addr() string { return net.JoinHostPort(ep.host, ep.port) }

// Redacted returns rawURL for a log line: rebuilt from its checked pieces,
// redis://host:port/db, with "redacted@" in place of any user information;
// the problem alone, "(refused: ...)", when Open would refuse it; "" for "".
func Redacted(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	ep, err := parseURL(rawURL)
	if err != nil {
		var p urlProblem
		if errors.As(err, &p) {
			return "(refused: " + string(p) + ")"
		}
		return "(refused)"
	}
	user := ""
	if ep.hasUser {
		user = "redacted@"
	}
	return "redis://" + user + ep.addr() + "/" + strconv.Itoa(ep.db)
}

// parseProblem describes url.Parse's error without any part of the URL:
// its *url.Error quotes the URL whole, and some of its inner errors quote
// a part of it (an escape, a "port" that is the password of a URL whose
// password holds a '/').
func parseProblem(err error) urlProblem {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var esc url.EscapeError
	var host url.InvalidHostError
	switch msg := err.Error(); {
	case errors.As(err, &esc):
		return problemEscape
	case errors.As(err, &host):
		return problemHostChar
	case strings.HasPrefix(msg, "invalid port"):
		return problemPort
	default:
		for _, p := range parseProblems {
			if strings.HasPrefix(msg, string(p)) {
				return p
			}
		}
	}
	return problemParse
}
