package redisreplay

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenErrorsHoldNoPassword: every URL Open refuses is refused with an
// error that holds no part of its password, whether the password is in
// user:password or alone (redis://password@host), and whatever url.Parse
// quotes of it; the log's form of the URL holds none either.
func TestOpenErrorsHoldNoPassword(t *testing.T) {
	const pw = "s3cr3tPW"
	for _, tc := range []struct{ name, url, want string }{
		{"bad escape in the password", "redis://user:" + pw + "%zz@127.0.0.1:6379", "invalid %-escape"},
		{"bad escape in the path", "redis://user:" + pw + "@127.0.0.1:6379/%zz", "invalid %-escape"},
		{"escape inside the password", "redis://user:ab%" + pw[:2] + pw[2:] + "@h", "invalid %-escape"},
		{"unclosed IPv6 host", "redis://user:" + pw + "@[::1:6379", "missing ']' in host"},
		{"bad port", "redis://user:" + pw + "@127.0.0.1:port", "invalid port"},
		{"a slash in the password", "redis://user:" + pw + "/x@127.0.0.1:6379", ""},
		{"space in the scheme", "redis ://user:" + pw + "@127.0.0.1:6379", "first path segment"},
		{"space in the path", "redis://user:" + pw + "@127.0.0.1:6379/0 1", "database number"},
		{"control character", "redis://user:" + pw + "@127.0.0.1:6379/\x01", "invalid control character"},
		{"TLS", "rediss://user:" + pw + "@h:6380", "rediss (TLS) is not supported"},
		{"another scheme", "http://user:" + pw + "@h:6380", "the scheme must be redis://"},
		{"another scheme, password alone", "http://" + pw + "@h:6380", "the scheme must be redis://"},
		{"no host", "redis://user:" + pw + "@", "the host is missing"},
		{"no host, password alone", "redis://" + pw + "@:6379", "the host is missing"},
		{"query", "redis://user:" + pw + "@h?db=1", "query or fragment"},
		{"bad database, password alone", "redis://" + pw + "@h:6379/x", "database number"},
		// In redis://password@host, url.Parse reads a password holding
		// '?', '#' or '/' as the host, and the rest as a query, fragment
		// or path: nothing it calls the host may be printed.
		{"password alone with a question mark", "redis://" + pw + "?x@127.0.0.1:6379", "query or fragment"},
		{"password alone with a hash", "redis://" + pw + "#x@127.0.0.1:6379", "query or fragment"},
		{"password alone with a slash", "redis://" + pw + "/x@127.0.0.1:6379", "database number"},
		{"user:password, a slash in the user", "redis://" + pw + "/x:y@127.0.0.1:6379", "database number"},
		{"password alone with a slash and digits", "redis://" + pw + "/1@127.0.0.1:6379", "database number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.url, "")
			require.Error(t, err)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), pw[:4])
			require.NotContains(t, Redacted(tc.url), pw[:4])
		})
	}
}

// TestRedactedIsRebuiltFromCheckedPieces: the log's form of a URL Open
// accepts is its host, port and database, with any user information
// replaced; of a URL Open refuses, Open's problem alone.
func TestRedactedIsRebuiltFromCheckedPieces(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"", ""},
		{"redis://127.0.0.1", "redis://127.0.0.1:6379/0"},
		{"redis://user:pw@h:6380/2", "redis://redacted@h:6380/2"},
		{"redis://pw@[::1]:6380", "redis://redacted@[::1]:6380/0"},
		{"redis://pw?x@h", "(refused: a query or fragment is not supported (escape a '/', '?' or '#' in the password: %2F, %3F, %23))"},
		{"http://h", "(refused: the scheme must be redis://)"},
		{"redis://u:pw%zz@h", "(refused: an invalid %-escape (write a % in the password as %25))"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			require.Equal(t, tc.want, Redacted(tc.url))
		})
	}
}
