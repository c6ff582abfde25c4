package mockserver

import (
	"strings"
	"testing"
)

// TestPageTokensServeOnlyTheirSearch: a search's page token is good for the
// search it was given for (realm, PEP client, search, request) and at the
// position the server gave (a subject search's cursor id or an offset),
// nothing else. Tokens were an unkeyed digest of the request: a client
// could make one for any offset, and one realm's token served the same
// request in another realm.
func TestPageTokensServeOnlyTheirSearch(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	scope := "acme\x00orders-api\x00subject\x00digest"
	const cursor = "5b0e6f7e-8a43-4a55-9d1c-2f7a8c1e0b3d"
	for _, pos := range []string{cursor, "20"} {
		tok := pageToken(key, scope, pos)
		if got, ok := readPageToken(key, tok, scope); !ok || got != pos {
			t.Fatalf("the server's own token: %q, %v", got, ok)
		}
	}
	tok := pageToken(key, scope, cursor)
	p, mac, _ := strings.Cut(tok, ".")
	other := pageTokenEncoding.EncodeToString([]byte("ffffffff-8a43-4a55-9d1c-2f7a8c1e0b3d"))
	for name, bad := range map[string]struct{ key, token, scope string }{
		"another realm":       {string(key), tok, "globex\x00orders-api\x00subject\x00digest"},
		"another client":      {string(key), tok, "acme\x00other-api\x00subject\x00digest"},
		"another search":      {string(key), tok, "acme\x00orders-api\x00action\x00digest"},
		"another request":     {string(key), tok, "acme\x00orders-api\x00subject\x00other"},
		"another cursor":      {string(key), other + "." + mac, scope},
		"cursor in the clear": {string(key), cursor + "." + mac, scope},
		"cursor spelt padded": {string(key), p + "=." + mac, scope},
		"empty cursor":        {string(key), "." + pageTokenEncoding.EncodeToString(pageMAC(key, scope, "")), scope},
		"MAC cut short":       {string(key), p + "." + mac[:len(mac)-2], scope},
		"another key":         {"fedcba9876543210fedcba9876543210", tok, scope},
		"no MAC":              {string(key), p, scope},
		"too long":            {string(key), strings.Repeat("A", maxPageToken) + "." + mac, scope},
		"garbage":             {string(key), "%%%.***", scope},
	} {
		if got, ok := readPageToken([]byte(bad.key), bad.token, bad.scope); ok {
			t.Errorf("%s: token accepted at %q", name, got)
		}
	}
	// Base64's last character may carry bits the bytes do not use (an
	// offset of two digits leaves two): a token with them set would be
	// another spelling of the same position, and is refused.
	op, omac, _ := strings.Cut(pageToken(key, scope, "20"), ".")
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range len(alphabet) {
		if c := alphabet[i]; c != op[len(op)-1] {
			if got, ok := readPageToken(key, op[:len(op)-1]+string(c)+"."+omac, scope); ok {
				t.Errorf("a respelt offset accepted at %q", got)
			}
		}
	}
}
