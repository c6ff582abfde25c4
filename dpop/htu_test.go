package dpop

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTU: the htu a URL is compared as (RFC 9449 section 4.3: no query
// or fragment, RFC 3986 section 6 normalisation), idempotent; and the URLs
// refused with ErrURL, whose error never repeats the URL.
func TestHTU(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
		err  bool
	}{
		{name: "already normal", in: "https://server.example.com/token", want: "https://server.example.com/token"},
		{name: "scheme and host lowercased", in: "HTTPS://Server.Example.COM/Token", want: "https://server.example.com/Token"},
		{name: "https default port dropped", in: "https://example.com:443/a", want: "https://example.com/a"},
		{name: "http default port dropped", in: "http://example.com:80/a", want: "http://example.com/a"},
		{name: "empty port dropped", in: "https://example.com:/a", want: "https://example.com/a"},
		{name: "other port kept", in: "https://example.com:8443/a", want: "https://example.com:8443/a"},
		{name: "http port 443 kept", in: "http://example.com:443/a", want: "http://example.com:443/a"},
		{name: "query removed", in: "https://example.com/a?b=c&d", want: "https://example.com/a"},
		{name: "fragment removed", in: "https://example.com/a#frag", want: "https://example.com/a"},
		{name: "empty query and fragment removed", in: "https://example.com/a?#", want: "https://example.com/a"},
		{name: "empty path becomes slash", in: "https://example.com", want: "https://example.com/"},
		{name: "empty path with query", in: "https://example.com?x=1", want: "https://example.com/"},
		{name: "userinfo dropped", in: "https://user:pw@example.com/a", want: "https://example.com/a"},
		{name: "percent hex uppercased", in: "https://example.com/a%2fb", want: "https://example.com/a%2Fb"},
		{name: "unreserved decoded", in: "https://example.com/%7Euser/%41%2D", want: "https://example.com/~user/A-"},
		{name: "space kept encoded", in: "https://example.com/a%20b", want: "https://example.com/a%20b"},
		{name: "dot segments removed", in: "https://example.com/a/./b/../c", want: "https://example.com/a/c"},
		{name: "encoded dot segments removed", in: "https://example.com/a/%2E%2E/c", want: "https://example.com/c"},
		{name: "dot dot above root", in: "https://example.com/../../a", want: "https://example.com/a"},
		{name: "trailing dot dot", in: "https://example.com/a/b/..", want: "https://example.com/a/"},
		{name: "trailing slash kept", in: "https://example.com/a/", want: "https://example.com/a/"},
		{name: "double slash kept", in: "https://example.com//a", want: "https://example.com//a"},
		{name: "ipv6 default port", in: "https://[2001:DB8::1]:443/x", want: "https://[2001:db8::1]/x"},
		{name: "ipv6 other port", in: "http://[::1]:8080/x", want: "http://[::1]:8080/x"},
		{name: "ipv4", in: "http://127.0.0.1:80", want: "http://127.0.0.1/"},
		{name: "unicode path encoded", in: "https://example.com/ü", want: "https://example.com/%C3%BC"},
		{name: "dot in name kept", in: "https://example.com/a.b/.c", want: "https://example.com/a.b/.c"},
		{name: "empty", in: "", err: true},
		{name: "relative", in: "/token", err: true},
		{name: "no scheme", in: "example.com/token", err: true},
		{name: "scheme relative", in: "//example.com/token", err: true},
		{name: "other scheme", in: "ftp://example.com/", err: true},
		{name: "opaque", in: "https:example.com", err: true},
		{name: "no host", in: "https:///token", err: true},
		{name: "port only", in: "https://:443/token", err: true},
		{name: "bad escape", in: "https://example.com/%zz", err: true},
		{name: "bad port", in: "https://example.com:x/", err: true},
		{name: "ipv6 zone", in: "https://[fe80::1%25en0]/", err: true},
		{name: "unbracketed colons", in: "http://::", err: true},
		{name: "bracketed non-ip", in: "http://[a:b:c:x]/", err: true},
		{name: "control character", in: "https://example.com/\n", err: true},
		{name: "other scheme, a secret in the query", in: "ftp://example.com/?access_token=s3cr3t", err: true},
		// a-dpop10 F1: Unicode case mapping made another host's name equal to
		// this one: "İnternal.example" is xn--internal-o0e.example on the wire.
		{name: "host not ASCII", in: "https://\u0130nternal.example/orders", err: true},
		{name: "host not ASCII, escaped", in: "https://%C4%B0nternal.example/orders", err: true},
		{name: "host with the Kelvin sign", in: "https://\u212Aey.example/", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := HTU(tt.in)
			if tt.err {
				require.ErrorIs(t, err, ErrURL)
				assert.Empty(t, got)
				assert.NotContains(t, err.Error(), "s3cr3t")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			again, err := HTU(got)
			require.NoError(t, err)
			assert.Equal(t, got, again, "HTU is idempotent")
		})
	}
}

func TestTokenHash(t *testing.T) {
	t.Parallel()
	// RFC 9449 section 7.1.
	assert.Equal(t, "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo",
		TokenHash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"))
}

func FuzzHTU(f *testing.F) {
	for _, s := range []string{
		"https://server.example.com/token", "HTTP://A.B:80/%7e/./../x?y#z", "https://[::1]:443",
		"https://example.com/a/%2E%2E/%2f", "http://x/..", "https://u@h:1/p;q",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := HTU(in)
		if err != nil {
			return
		}
		again, err := HTU(got)
		if err != nil {
			t.Fatalf("HTU(%q) = %q, which HTU rejects: %v", in, got, err)
		}
		if again != got {
			t.Fatalf("HTU not idempotent: %q -> %q -> %q", in, got, again)
		}
	})
}

// TestAProofForAHostUnicodeFoldsOntoOursIsRefused: a proof whose htu names
// İnternal.example (xn--internal-o0e.example on the wire, anyone's to
// register) is not accepted at internal.example, and no Signer writes
// internal.example into a proof for the other host (a-dpop10 F1: HTU
// lower-cased hosts with Unicode case mapping, and "İ" became "i").
func TestAProofForAHostUnicodeFoldsOntoOursIsRefused(t *testing.T) {
	t.Parallel()
	loadKeys(t)
	const ours, theirs = "https://internal.example/orders", "https://\u0130nternal.example/orders"
	_, err := mustSigner(t, testEd).Proof("GET", theirs, testToken, "")
	require.ErrorIs(t, err, ErrURL)

	proof := ed25519Proof(t, "Ed25519", testEd, func(_, c map[string]any) { c["htu"] = theirs })
	_, err = newVerifierAt(t, testNow).Verify(t.Context(), Request{Proofs: []string{proof}, Method: "GET",
		URL: ours, AccessToken: testToken, JKT: thumbprintOf(t, testEd.Public())})
	requireOnly(t, err, ErrURL)
}
