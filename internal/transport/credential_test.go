package transport

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCredentials: what each credential attaches to an attempt, made on a
// clone of the request so that nothing reaches the next attempt.
func TestCredentials(t *testing.T) {
	t.Parallel()
	key := p256Key(t)
	signer := mustSigner(t, key)
	tests := []struct {
		name       string
		cred       Credential
		ident      Ident
		header     string // the Authorization header
		proof      bool   // a DPoP header is attached
		unusable   bool
		authorizes bool
	}{
		{"bearer", NewBearer("tok"), Ident{Scheme: SchemeBearer, Token: "tok"}, "Bearer tok", false, false, true},
		{"dpop", NewDPoP("tok", signer), Ident{Scheme: SchemeDPoP, Token: "tok"}, "DPoP tok", true, false, true},
		{"dpop without a signer", NewDPoP("tok", nil), Ident{Scheme: SchemeDPoP, Token: "tok"}, "", false, true, false},
		{"held", Hold(NewBearer("tok")), Ident{Scheme: SchemeBearer, Token: "tok"}, "Bearer tok", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.ident, tt.cred.Ident())
			assert.Equal(t, tt.unusable, tt.cred.Usable() != nil)
			r, err := http.NewRequest(http.MethodPost, "https://gw.example/decide", nil)
			require.NoError(t, err)
			err = tt.cred.Authorize(r, "a-nonce")
			if !tt.authorizes {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.header, r.Header.Get("Authorization"))
			assert.Equal(t, tt.proof, r.Header.Get("DPoP") != "")
		})
	}
	assert.Equal(t, "Bearer", SchemeBearer.String())
	assert.Equal(t, "DPoP", SchemeDPoP.String())
	assert.Empty(t, Scheme(0).String())
}

// TestReleasedCredentialAttachesNothing: a token the client let go of is
// attached to no attempt, a retry or a resend included (ErrTokenChanged).
func TestReleasedCredentialAttachesNothing(t *testing.T) {
	t.Parallel()
	h := Hold(NewBearer("tok"))
	assert.False(t, released(h))
	h.Release()
	h.Release() // again: nothing more
	assert.True(t, released(h))
	assert.False(t, released(NewBearer("tok")), "only a held credential is released")
	r, err := http.NewRequest(http.MethodPost, "https://gw.example/decide", nil)
	require.NoError(t, err)
	require.ErrorIs(t, h.Authorize(r, ""), ErrTokenChanged)
	assert.Empty(t, r.Header.Get("Authorization"))
}

// TestCheckToken: a token that cannot be sent is refused before anything
// is, with an error that says what to fix, names the client that spoke
// and holds nothing of the token.
func TestCheckToken(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t"
	tests := []struct {
		name  string
		token string
		want  string // "" when the token can be sent
	}{
		{"visible ASCII", "eyJh.e30-_~+/=", ""},
		{"at the bound", strings.Repeat("a", 16), ""},
		{"over the bound", strings.Repeat("a", 17), "authzen: no token: the token is 17 bytes, more than the 16 the client sends (WithMaxTokenBytes)"},
		{"a space", secret + " x", "authzen: no token: the token holds characters an HTTP header cannot carry"},
		{"a newline", secret + "\n", "authzen: no token: the token holds characters an HTTP header cannot carry"},
		{"not ASCII", secret + "é", "authzen: no token: the token holds characters an HTTP header cannot carry"},
		{"empty", "", "authzen: no token: the token holds characters an HTTP header cannot carry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Peer("authzen: PDP").CheckToken(tt.token, 16)
			assert.Equal(t, tt.want == "", ValidToken(tt.token) && len(tt.token) <= 16)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrNoToken)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), err.Error())
			assert.NotContains(t, err.Error(), secret)
		})
	}
}

// TestNonceStoreIsBounded: the nonces of at most maxNonceOrigins origins
// are kept; a new origin past the bound starts the store over, and an
// origin already known is updated in place.
func TestNonceStoreIsBounded(t *testing.T) {
	t.Parallel()
	var s NonceStore
	for i := range maxNonceOrigins {
		s.set(originKey{scheme: "https", host: strings.Repeat("h", i+1)}, "n")
	}
	known := originKey{scheme: "https", host: "h"}
	s.set(known, "n2")
	assert.Equal(t, "n2", s.get(known))
	assert.Len(t, s.m, maxNonceOrigins)
	s.set(originKey{scheme: "https", host: "new"}, "n")
	assert.Len(t, s.m, 1)
	assert.Empty(t, s.get(known))
}

// TestOnlyANonceIsTaken: an answer's DPoP-Nonce goes into every later
// proof, so a value that is not a nonce (RFC 9449: 1*NQCHAR, printable
// ASCII bar '"' and '\') or is past maxNonceBytes is not taken: the
// next proof would carry it and be refused, and every one after it.
func TestOnlyANonceIsTaken(t *testing.T) {
	t.Parallel()
	for value, taken := range map[string]bool{
		"eyJ7S_zG.9WfMXF-~!#$%&'()*+,/:;<=>?@[]^`{|}": true,
		strings.Repeat("n", maxNonceBytes):            true,
		strings.Repeat("n", maxNonceBytes+1):          false,
		"":                                            false,
		"two words":                                   false,
		`quo"te`:                                      false,
		`back\slash`:                                  false,
		"tab\there":                                   false,
		"caf\xc3\xa9":                                 false,
		"del\x7f":                                     false,
	} {
		resp := &http.Response{Header: http.Header{"Dpop-Nonce": {value}}}
		if taken {
			assert.Equal(t, value, dpopNonce(resp), "%.40q", value)
		} else {
			assert.Empty(t, dpopNonce(resp), "%.40q", value)
		}
	}
}
