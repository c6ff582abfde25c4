package mockserver

import (
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
