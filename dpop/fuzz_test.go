package dpop

import (
	"bytes"
	"encoding/asn1"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// fuzzNow is close to the iat of the RFC 9449 section 4.1 example proof, so
// the seeds include a proof that verifies.
var fuzzNow = time.Unix(1562262617, 0)

// FuzzVerify feeds arbitrary bytes to Verify as the DPoP header. Verify must
// never panic, must classify every failure as one of the package's sentinel
// errors, and may only accept input with a complete result.
func FuzzVerify(f *testing.F) {
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		f.Fatal(err)
	}
	var vec vectors
	if err := json.Unmarshal(raw, &vec); err != nil {
		f.Fatal(err)
	}
	for _, p := range vec.Proofs {
		f.Add([]byte(p.Proof))
	}
	s, err := GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	proof, err := s.WithClock(fixedClock(fuzzNow)).Proof("POST", "https://server.example.com/token", "", "")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(proof))
	for _, seed := range []string{
		"", ".", "..", "a.b.c", "e30.e30.", "eyJhbGciOiJub25lIn0.e30.",
		"eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6Im9jdCIsImsiOiJBQSJ9fQ.e30.AA",
	} {
		f.Add([]byte(seed))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		v := testkit.Must(NewVerifier(WithClock(fixedClock(fuzzNow)), WithReplayCacheSize(4)))(t)
		res, err := v.Verify(t.Context(), Request{
			Proofs: []string{string(data)},
			Method: "POST",
			URL:    "https://server.example.com/token",
		})
		if err == nil {
			if res == nil || res.Thumbprint == "" || res.Claims.ID == "" || res.PublicKey == nil {
				t.Fatalf("accepted with an incomplete result: %+v", res)
			}
			return
		}
		if res != nil {
			t.Fatalf("result returned with error %v", err)
		}
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("unclassified error: %v", err)
	})
}

// FuzzVerifySigned fuzzes the header and claims JSON of validly signed
// proofs, so the checks after the signature are reached. Whatever Verify
// accepts must satisfy the RFC 9449 rules, re-checked here independently.
func FuzzVerifySigned(f *testing.F) {
	fx := newFixture(f)
	f.Add(mustJSON(f, fx.header(f)), mustJSON(f, map[string]any{
		"jti": "j", "htm": "POST", "htu": "https://server.example.com/token", "iat": fuzzNow.Unix(),
	}))
	f.Add([]byte(`{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"AA","y":"AA","d":"AA"}}`),
		[]byte(`{"jti":"j","htm":"POST","htu":"https://Server.example.com:443/token?x","iat":1562262617.5}`))
	f.Add([]byte(`{"typ":"dpop+jwt","alg":"ES256","alg":"none"}`), []byte(`{"jti":"j","jti":""}`))

	f.Fuzz(func(t *testing.T, header, claims []byte) {
		v := testkit.Must(NewVerifier(WithClock(fixedClock(fuzzNow)), WithReplayCacheSize(4)))(t)
		proof := forgeSign(t, "ES256", fx.key, header, claims)
		res, err := v.Verify(t.Context(), Request{
			Proofs: []string{proof}, Method: "POST", URL: "https://server.example.com/token",
		})
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("unclassified error: %v", err)
		}
		var h struct {
			Typ string         `json:"typ"`
			Alg string         `json:"alg"`
			JWK map[string]any `json:"jwk"`
		}
		var c struct {
			JTI string  `json:"jti"`
			HTM string  `json:"htm"`
			HTU string  `json:"htu"`
			IAT float64 `json:"iat"`
		}
		if json.Unmarshal(header, &h) != nil || json.Unmarshal(claims, &c) != nil {
			t.Fatalf("accepted unparsable JSON: %s %s", header, claims)
		}
		htu, err := HTU(c.HTU)
		switch {
		case h.Typ != "dpop+jwt" || h.Alg != "ES256":
			t.Fatalf("accepted typ %q alg %q", h.Typ, h.Alg)
		case h.JWK["d"] != nil || h.JWK["kty"] != "EC":
			t.Fatalf("accepted jwk %v", h.JWK)
		case c.JTI == "" || c.HTM != "POST" || err != nil || htu != "https://server.example.com/token":
			t.Fatalf("accepted claims %s", claims)
		case c.IAT < float64(fuzzNow.Add(-DefaultMaxAge).Unix()) || c.IAT > float64(fuzzNow.Add(DefaultMaxSkew).Unix()):
			t.Fatalf("accepted iat %v", c.IAT)
		case res.Thumbprint != fx.jkt:
			t.Fatalf("thumbprint %q, want %q", res.Thumbprint, fx.jkt)
		}
	})
}

// FuzzECDSADERToJWS checks the hand-written DER reader of ecdsaDERToJWS
// against encoding/asn1 and math/big: for any input both accept or both
// refuse, and where they accept they give the same R||S (small values
// padded to the size). Its seeds are the unit cases.
func FuzzECDSADERToJWS(f *testing.F) {
	for _, seed := range [][]byte{
		{0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02},                                                  // r=1, s=2
		{0x30, 0x06, 0x02, 0x01, 0xff, 0x02, 0x01, 0x02},                                                  // r negative
		{0x30, 0x07, 0x02, 0x02, 0x00, 0x01, 0x02, 0x01, 0x02},                                            // r not minimal
		{0x30, 0x07, 0x02, 0x02, 0x00, 0x80, 0x02, 0x01, 0x02},                                            // r=128, sign byte
		{0x30, 0x81, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02},                                            // long form below 128
		{0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02, 0x00},                                            // trailing byte
		{0x30, 0x06, 0x02, 0x01, 0x00, 0x02, 0x01, 0x02},                                                  // r zero
		{0x30, 0x05, 0x02, 0x00, 0x02, 0x01, 0x02},                                                        // r empty
		append([]byte{0x30, 0x26, 0x02, 0x21, 0x00, 0x80}, append(make([]byte, 31), 0x02, 0x01, 0x01)...), // 32-byte r, high bit
		append([]byte{0x30, 0x27, 0x02, 0x22, 0x00, 0x80}, append(make([]byte, 32), 0x02, 0x01, 0x01)...), // 33-byte r: too large
		[]byte("nope"), // not DER
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		got, err := ecdsaDERToJWS(der, 32)
		want, wantErr := asn1ECDSAToJWS(der, 32)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%x: hand-written reader says %v, encoding/asn1 %v", der, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("%x: R||S %x, encoding/asn1 %x", der, got, want)
		}
	})
}

// asn1ECDSAToJWS is the reference of FuzzECDSADERToJWS: the conversion as
// encoding/asn1 and math/big do it, accepting only the canonical DER of the
// two integers (encoding/asn1 alone ignores bytes after the last field of
// a SEQUENCE, which the hand-written reader refuses).
func asn1ECDSAToJWS(der []byte, size int) ([]byte, error) {
	var sig struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(der, &sig)
	if err != nil || len(rest) != 0 {
		return nil, errors.New("malformed")
	}
	if canonical, err := asn1.Marshal(sig); err != nil || !bytes.Equal(canonical, der) {
		return nil, errors.New("not canonical")
	}
	if sig.R.Sign() <= 0 || sig.S.Sign() <= 0 || sig.R.BitLen() > 8*size || sig.S.BitLen() > 8*size {
		return nil, errors.New("out of range")
	}
	out := make([]byte, 2*size)
	sig.R.FillBytes(out[:size])
	sig.S.FillBytes(out[size:])
	return out, nil
}

// FuzzProof makes proofs from arbitrary method, url, token and nonce: each
// is an error that does not repeat the token, or a proof go-jose verifies
// whose claims carry the inputs (as JSON carries them: invalid UTF-8
// becomes U+FFFD) and whose ath is the token's.
func FuzzProof(f *testing.F) {
	f.Add("GET", "https://h/a", "tok", "n")
	f.Add("\x00", "http://[::1]/", "", "\xff")
	f.Add("M\"\\", "https://EXAMPLE.com:443/a/../b/%7e?x=1#f", "t", "n\"\\\x01\x7f<>&\u2028")
	f.Fuzz(func(t *testing.T, method, url, token, nonce string) {
		loadKeys(t)
		s := mustSigner(t, testEd)
		proof, err := s.Proof(method, url, token, nonce)
		if err != nil {
			if len(token) > 3 && strings.Contains(err.Error(), token) {
				t.Fatalf("token in error %v", err)
			}
			return
		}
		if err := verifyWithGoJose(proof); err != nil {
			t.Fatalf("go-jose: %v", err)
		}
		_, claims := decodeProof(t, proof)
		htu, _ := HTU(url)
		if claims["htm"] != asJSON(method) || claims["htu"] != htu {
			t.Fatalf("htm %q htu %q for %q %q", claims["htm"], claims["htu"], method, url)
		}
		if nonce != "" && claims["nonce"] != asJSON(nonce) || nonce == "" && claims["nonce"] != nil {
			t.Fatalf("nonce %q for %q", claims["nonce"], nonce)
		}
		if token != "" && claims["ath"] != TokenHash(token) || token == "" && claims["ath"] != nil {
			t.Fatalf("ath %q for a token of %d bytes", claims["ath"], len(token))
		}
	})
}

// asJSON is s after a trip through a JSON string.
func asJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}
