package mockserver

import (
	"strings"
	"testing"
)

// TestPageTokensServeOnlyTheirSearch: a search's page token is good for the
// search it was given for (realm, PEP client, request) and at the offset the
// server gave, nothing else. Tokens were an unkeyed digest of the request:
// a client could make one for any offset, and one realm's token served the
// same request in another realm.
func TestPageTokensServeOnlyTheirSearch(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	scope := "acme\x00orders-api\x00digest"
	tok := pageToken(key, scope, 20)
	if o, ok := readPageToken(key, tok, scope); !ok || o != 20 {
		t.Fatalf("the server's own token: %d, %v", o, ok)
	}
	_, mac, _ := strings.Cut(tok, ".")
	for name, bad := range map[string]struct{ key, token, scope string }{
		"another realm":    {string(key), tok, "globex\x00orders-api\x00digest"},
		"another client":   {string(key), tok, "acme\x00other-api\x00digest"},
		"another request":  {string(key), tok, "acme\x00orders-api\x00other"},
		"another offset":   {string(key), "1." + mac, scope},
		"offset spelt 020": {string(key), "020." + mac, scope},
		"another key":      {"fedcba9876543210fedcba9876543210", tok, scope},
		"no MAC":           {string(key), "20", scope},
		"garbage":          {string(key), "%%%.***", scope},
	} {
		if o, ok := readPageToken([]byte(bad.key), bad.token, bad.scope); ok {
			t.Errorf("%s: token accepted at offset %d", name, o)
		}
	}
}
