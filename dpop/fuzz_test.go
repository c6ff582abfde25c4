package dpop

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"
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
		v, err := NewVerifier(WithClock(fixedClock(fuzzNow)), WithReplayCacheSize(4))
		if err != nil {
			t.Fatal(err)
		}
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
		v, err := NewVerifier(WithClock(fixedClock(fuzzNow)), WithReplayCacheSize(4))
		if err != nil {
			t.Fatal(err)
		}
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
