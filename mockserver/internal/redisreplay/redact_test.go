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
