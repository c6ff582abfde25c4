package redisreplay

import (
	"errors"
	"net/url"
	"strings"
)

// This file keeps the -redis URL's password out of every error and log
// line: an error built from the URL names only its scheme, host and path,
// never its user information (in redis://password@host the "user" is the
// password), and never an excerpt url.Parse quotes from it.

// Redacted returns rawURL for a log line: its user information, which
// holds the password, replaced by "redacted"; "(unparsable)" when rawURL
// does not parse; "" for "".
func Redacted(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable)"
	}
	return redacted(u)
}

// redacted returns u with its user information, if any, replaced.
func redacted(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("redacted")
	}
	return c.String()
}

// parseProblems are url.Parse's messages that quote nothing of their
// input, by the start of the message.
var parseProblems = []string{
	"missing protocol scheme",
	"first path segment in URL cannot contain colon",
	"missing ']' in host",
	"invalid userinfo",
	"net/url: invalid control character in URL",
}

// parseProblem describes url.Parse's error without any part of the URL:
// its *url.Error quotes the URL whole, and some of its inner errors quote
// a part of it (an escape, a "port" that is the password of a URL whose
// password holds a '/').
func parseProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var esc url.EscapeError
	var host url.InvalidHostError
	switch msg := err.Error(); {
	case errors.As(err, &esc):
		return "an invalid %-escape (write a % in the password as %25)"
	case errors.As(err, &host):
		return "an invalid character in the host"
	case strings.HasPrefix(msg, "invalid port"):
		return "an invalid port (escape a '/', '?' or '#' in the password: %2F, %3F, %23)"
	default:
		for _, p := range parseProblems {
			if strings.HasPrefix(msg, p) {
				return p
			}
		}
	}
	return "it does not parse"
}
