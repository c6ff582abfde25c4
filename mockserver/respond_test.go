package mockserver

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBodyReaderReuse: a body read into a buffer that held a longer body
// before is that body alone, and a body over the limit is read up to one
// byte past it, whatever the pool hands out.
func TestBodyReaderReuse(t *testing.T) {
	for _, body := range []string{strings.Repeat("long ", 1000), "short", "", strings.Repeat("x", maxBody+10), "{}"} {
		br := getBodyReader(strings.NewReader(body))
		got, err := br.read()
		require.NoError(t, err)
		want := body[:min(len(body), maxBody+1)]
		require.Equal(t, want, string(got))
		br.release()
	}
}

// TestHeaderValueIsGet: headerValue, given the canonical keys the server
// reads by it, finds what Header.Get finds, in a header set by Set, by Add,
// by net/http's reading of a request, and in one holding a key that is not
// canonical (which Get does not find either).
func TestHeaderValueIsGet(t *testing.T) {
	t.Parallel()
	keys := []string{"Authorization", "Content-Type", "Expect"}
	for _, k := range keys {
		require.Equal(t, http.CanonicalHeaderKey(k), k, "headerValue needs the canonical key")
	}
	read, err := http.ReadRequest(bufio.NewReader(strings.NewReader(
		"POST / HTTP/1.1\r\nHost: x\r\nauthorization: Bearer a\r\ncontent-TYPE: application/json\r\nEXPECT: 100-continue\r\nContent-Length: 0\r\n\r\n")))
	require.NoError(t, err)
	set := http.Header{}
	set.Set("authorization", "Bearer b")
	set.Add("content-type", "text/plain")
	set.Add("Content-Type", "application/json")
	odd := http.Header{"authorization": {"Bearer c"}, "expect": {"100-continue"}}
	for name, h := range map[string]http.Header{"read": read.Header, "set": set, "not canonical": odd, "empty": {}} {
		for _, k := range keys {
			require.Equal(t, h.Get(k), headerValue(h, k), "%s: %s", name, k)
		}
	}
}
