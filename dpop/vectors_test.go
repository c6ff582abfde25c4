package dpop

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// vectorsPath is the package's copy of ../../shared/spec/dpop-vectors.json.
const (
	vectorsPath       = "testdata/dpop-vectors.json"
	sharedVectorsPath = "../../shared/spec/dpop-vectors.json"
)

type vectors struct {
	KeyJKT string `json:"rfc9449_key_jkt"`
	Proofs []struct {
		Section     string `json:"section"`
		HTM         string `json:"htm"`
		HTU         string `json:"htu"`
		IAT         int64  `json:"iat"`
		JTI         string `json:"jti"`
		AccessToken string `json:"access_token"`
		ATH         string `json:"ath"`
		Proof       string `json:"proof"`
	} `json:"proofs"`
	AccessTokenJWT struct {
		JWT string `json:"jwt"`
	} `json:"rfc9449_6_1_access_token_jwt"`
	Thumbprints []struct {
		Source   string          `json:"source"`
		JWK      json.RawMessage `json:"jwk"`
		JKT      string          `json:"jkt"`
		BuggyJKT string          `json:"buggy_jkt_if_zero_stripped"`
	} `json:"thumbprints"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	raw := testkit.Must(os.ReadFile(vectorsPath))(t)
	var v vectors
	require.NoError(t, json.Unmarshal(raw, &v))
	require.Len(t, v.Proofs, 3)
	return v
}

// TestVectorsCopyInSync keeps testdata's copy equal to the shared spec file
// when the shared checkout sits beside the module (as in CI).
func TestVectorsCopyInSync(t *testing.T) {
	t.Parallel()
	local := testkit.Must(os.ReadFile(vectorsPath))(t)
	shared, err := os.ReadFile(sharedVectorsPath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Logf("%s not present; only the testdata copy is used", sharedVectorsPath)
		return
	}
	require.NoError(t, err)
	assert.True(t, bytes.Equal(local, shared), "testdata/dpop-vectors.json differs from %s", sharedVectorsPath)
}

// tokenJKT returns cnf.jkt of the RFC 9449 section 6.1 access token (decoded
// only: its signing key is not published).
func tokenJKT(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	payload := unbase64(t, parts[1])
	var claims struct {
		Cnf struct {
			JKT string `json:"jkt"`
		} `json:"cnf"`
	}
	require.NoError(t, json.Unmarshal(payload, &claims))
	return claims.Cnf.JKT
}

func TestRFC9449Proofs(t *testing.T) {
	t.Parallel()
	vec := loadVectors(t)
	jkt := tokenJKT(t, vec.AccessTokenJWT.JWT)
	require.Equal(t, vec.KeyJKT, jkt, "the section 6.1 token is bound to the example key")

	for _, p := range vec.Proofs {
		t.Run(p.Section, func(t *testing.T) {
			t.Parallel()
			iat := time.Unix(p.IAT, 0)
			v := newVerifierAt(t, iat.Add(time.Second))
			req := Request{Proofs: []string{p.Proof}, Method: p.HTM, URL: p.HTU}
			if p.AccessToken != "" {
				req.AccessToken, req.JKT = p.AccessToken, jkt
				assert.Equal(t, p.ATH, TokenHash(p.AccessToken))
			}
			res := testkit.Must(v.Verify(t.Context(), req))(t)
			assert.Equal(t, vec.KeyJKT, res.Thumbprint)
			assert.Equal(t, "ES256", res.Algorithm)
			assert.Equal(t, p.JTI, res.Claims.ID)
			assert.Equal(t, p.HTM, res.Claims.Method)
			assert.Equal(t, p.HTU, res.Claims.URL)
			assert.Equal(t, p.IAT, res.Claims.IssuedAt.Unix())
			assert.Equal(t, p.ATH, res.Claims.AccessTokenHash)

			_, err := v.Verify(t.Context(), req)
			requireOnly(t, err, ErrReplay)

			// The same proof against other requests or later clocks.
			tooLate := newVerifierAt(t, iat.Add(DefaultMaxAge+time.Second))
			_, err = tooLate.Verify(t.Context(), req)
			requireOnly(t, err, ErrIATTooOld)
			tooEarly := newVerifierAt(t, iat.Add(-DefaultMaxSkew-time.Second))
			_, err = tooEarly.Verify(t.Context(), req)
			requireOnly(t, err, ErrIATInFuture)
			other := req
			other.Method = "PUT"
			_, err = newVerifierAt(t, iat).Verify(t.Context(), other)
			requireOnly(t, err, ErrMethod)
			if p.AccessToken != "" {
				other = req
				other.AccessToken = p.AccessToken + "x"
				_, err = newVerifierAt(t, iat).Verify(t.Context(), other)
				requireOnly(t, err, ErrTokenHash)
			}
		})
	}
}

// TestRFC9449SharedJTI: the section 4.1 and 5 proofs reuse one jti. One
// Verifier catches the replay inside the window and accepts the later proof
// once the first has expired.
func TestRFC9449SharedJTI(t *testing.T) {
	t.Parallel()
	vec := loadVectors(t)
	first, second := vec.Proofs[0], vec.Proofs[1]
	require.Equal(t, first.JTI, second.JTI)
	clock := testkit.NewClock(time.Unix(first.IAT, 0))
	v := mustVerifier(t, WithClock(clock.Now))
	req := func(p string) Request {
		return Request{Proofs: []string{p}, Method: "POST", URL: "https://server.example.com/token"}
	}

	verified(t, v, req(first.Proof))
	clock.Advance(30 * time.Second)
	_, err := v.Verify(t.Context(), req(first.Proof))
	requireOnly(t, err, ErrReplay)

	clock.Set(time.Unix(second.IAT, 0))
	testkit.Must(v.Verify(t.Context(), req(second.Proof)))(t, "the first proof's entry expired with its window")
	_, err = v.Verify(t.Context(), req(second.Proof))
	requireOnly(t, err, ErrReplay)
}

func newVerifierAt(t *testing.T, now time.Time) *Verifier {
	t.Helper()
	v := mustVerifier(t, WithClock(fixedClock(now)))
	return v
}

func TestThumbprintVectors(t *testing.T) {
	t.Parallel()
	vec := loadVectors(t)
	require.Len(t, vec.Thumbprints, 3)
	for _, tv := range vec.Thumbprints {
		t.Run(tv.Source, func(t *testing.T) {
			t.Parallel()
			var key jose.JSONWebKey
			require.NoError(t, key.UnmarshalJSON(tv.JWK))

			// The Signer's thumbprint, for a key that only exposes Public.
			s := testkit.Must(NewSigner(opaqueKey{pub: key.Key}))(t)
			assert.Equal(t, tv.JKT, s.Thumbprint())

			// The Verifier's computation.
			assert.Equal(t, tv.JKT, thumbprintOf(t, key.Key))

			if tv.BuggyJKT != "" {
				var members map[string]string
				require.NoError(t, json.Unmarshal(tv.JWK, &members))
				x := unbase64(t, members["x"])
				require.Len(t, x, 32)
				require.Zero(t, x[0], "the vector's x coordinate has a leading zero byte")
				assert.NotEqual(t, tv.BuggyJKT, s.Thumbprint())
			}
		})
	}
}
