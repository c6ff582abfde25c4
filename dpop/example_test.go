package dpop_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
)

func ExampleSigner_Proof() {
	signer, err := dpop.GenerateKey()
	if err != nil {
		panic(err)
	}
	proof, err := signer.Proof("GET", "https://API.example.com:443/orders?page=2", "an-access-token", "")
	if err != nil {
		panic(err)
	}
	// The proof goes in the request's DPoP header, next to
	// "Authorization: DPoP an-access-token". Decode it to show its contents.
	parts := strings.Split(proof, ".")
	var header struct {
		Typ string         `json:"typ"`
		Alg string         `json:"alg"`
		JWK map[string]any `json:"jwk"`
	}
	var claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(parts[0])
	_ = json.Unmarshal(b, &header)
	b, _ = base64.RawURLEncoding.DecodeString(parts[1])
	_ = json.Unmarshal(b, &claims)

	fmt.Println("typ:", header.Typ)
	fmt.Println("alg:", header.Alg)
	fmt.Println("jwk kty:", header.JWK["kty"], "crv:", header.JWK["crv"])
	fmt.Println("htm:", claims["htm"])
	fmt.Println("htu:", claims["htu"])
	fmt.Println("ath is the token hash:", claims["ath"] == dpop.TokenHash("an-access-token"))
	// Output:
	// typ: dpop+jwt
	// alg: ES256
	// jwk kty: EC crv: P-256
	// htm: GET
	// htu: https://api.example.com/orders
	// ath is the token hash: true
}

func ExampleHTU() {
	htu, err := dpop.HTU("HTTPS://Server.Example.COM:443/a/./b/../token?grant_type=x#frag")
	if err != nil {
		panic(err)
	}
	fmt.Println(htu)
	// Output: https://server.example.com/a/token
}

func ExampleTokenHash() {
	// The access token and ath of RFC 9449 section 7.1.
	fmt.Println(dpop.TokenHash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"))
	// Output: fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo
}

// Example shows both sides: a client signs a proof for a resource request,
// the resource server verifies it against the token's cnf.jkt, and a replay
// of the same proof is refused with the challenge the server would send.
func Example() {
	// Client side.
	signer, err := dpop.GenerateKey()
	if err != nil {
		panic(err)
	}
	token := "token-bound-to-" + signer.Thumbprint() // issued with cnf.jkt = signer.Thumbprint()
	proof, err := signer.Proof("GET", "https://rs.example.com/orders?page=2", token, "")
	if err != nil {
		panic(err)
	}

	// Server side: one Verifier shared by all handlers.
	verifier, err := dpop.NewVerifier()
	if err != nil {
		panic(err)
	}
	req := dpop.Request{
		Proofs:      []string{proof}, // r.Header.Values("DPoP")
		Method:      "GET",
		URL:         "https://rs.example.com/orders?page=2",
		AccessToken: token,
		JKT:         signer.Thumbprint(), // the token's cnf.jkt
	}
	res, err := verifier.Verify(context.Background(), req)
	fmt.Println("accepted:", err == nil, "key matches:", err == nil && res.Thumbprint == signer.Thumbprint())

	_, err = verifier.Verify(context.Background(), req)
	fmt.Println("replay refused:", errors.Is(err, dpop.ErrReplay))
	fmt.Println("WWW-Authenticate:", verifier.Challenge(err))
	// Output:
	// accepted: true key matches: true
	// replay refused: true
	// WWW-Authenticate: DPoP error="invalid_dpop_proof", error_description="proof replayed", algs="ES256 ES384 PS256 RS256 EdDSA Ed25519"
}

// serverNonces is a toy Nonces with a single current nonce. A real server
// rotates nonces and shares them between its instances.
type serverNonces struct{ current string }

func (n serverNonces) Valid(_ context.Context, nonce string) bool { return nonce == n.current }

func (n serverNonces) Next(context.Context) (string, error) { return n.current, nil }

// ExampleWithNonces shows a server that requires nonces: the first proof is
// refused with use_dpop_nonce and a nonce, the retry carrying it is accepted.
func ExampleWithNonces() {
	verifier, err := dpop.NewVerifier(dpop.WithNonces(serverNonces{current: "eyJ7S_zG.eyJH0-Z.HX4w-7v"}))
	if err != nil {
		panic(err)
	}
	signer, err := dpop.GenerateKey()
	if err != nil {
		panic(err)
	}
	verify := func(nonce string) error {
		proof, err := signer.Proof("POST", "https://as.example.com/token", "", nonce)
		if err != nil {
			return err
		}
		_, err = verifier.Verify(context.Background(), dpop.Request{
			Proofs: []string{proof}, Method: "POST", URL: "https://as.example.com/token",
		})
		return err
	}

	err = verify("")
	var nerr *dpop.NonceError
	if errors.As(err, &nerr) {
		fmt.Println("error:", dpop.ErrorCode(err))
		fmt.Println("DPoP-Nonce:", nerr.Nonce)
	}
	fmt.Println("retry accepted:", verify(nerr.Nonce) == nil)
	// Output:
	// error: use_dpop_nonce
	// DPoP-Nonce: eyJ7S_zG.eyJH0-Z.HX4w-7v
	// retry accepted: true
}

func ExampleVerifier_Challenge() {
	verifier, err := dpop.NewVerifier(dpop.WithAlgorithms("ES256", "EdDSA"))
	if err != nil {
		panic(err)
	}
	fmt.Println(verifier.Challenge(nil))
	fmt.Println(verifier.Challenge(dpop.ErrIATTooOld))
	fmt.Println(verifier.Challenge(dpop.ErrKeyMismatch))
	// Output:
	// DPoP algs="ES256 EdDSA"
	// DPoP error="invalid_dpop_proof", error_description="proof is too old", algs="ES256 EdDSA"
	// DPoP error="invalid_token", error_description="proof key does not match the token binding", algs="ES256 EdDSA"
}

// A token endpoint checks the proof before it knows who the client is, and
// records it only once the client has authenticated: a request with a
// made-up client leaves nothing in the replay cache.
func ExampleVerifier_Check() {
	verifier, err := dpop.NewVerifier()
	if err != nil {
		panic(err)
	}
	signer, err := dpop.GenerateKey()
	if err != nil {
		panic(err)
	}
	const tokenURL = "https://as.example.com/token"
	proof, err := signer.Proof("POST", tokenURL, "", "")
	if err != nil {
		panic(err)
	}
	req := dpop.Request{Proofs: []string{proof}, Method: "POST", URL: tokenURL}
	authenticate := func(clientSecret string) bool { return clientSecret == "s3cret" }

	for _, secret := range []string{"wrong", "s3cret", "s3cret"} {
		res, err := verifier.Check(context.Background(), req)
		if err != nil {
			fmt.Println("proof refused:", errors.Is(err, dpop.ErrReplay))
			continue
		}
		if !authenticate(secret) {
			fmt.Println("invalid_client; nothing recorded")
			continue
		}
		if err := verifier.Record(res); err != nil {
			fmt.Println("proof refused:", err)
			continue
		}
		fmt.Println("token bound to", res.Thumbprint == signer.Thumbprint())
	}
	// Output:
	// invalid_client; nothing recorded
	// token bound to true
	// proof refused: true
}

// Replicas that share a nonce secret accept each other's nonces: a client
// told use_dpop_nonce by one replica may send its retry to another.
func ExampleNewHMACNonces() {
	secret := []byte("0123456789abcdef0123456789abcdef") // at least 32 random bytes, the same on every replica
	replicaA, err := dpop.NewHMACNonces(secret, 2*time.Minute)
	if err != nil {
		panic(err)
	}
	replicaB, err := dpop.NewHMACNonces(secret, 2*time.Minute)
	if err != nil {
		panic(err)
	}
	nonce, _ := replicaA.Next(context.Background())
	fmt.Println(replicaB.Valid(context.Background(), nonce))
	fmt.Println(replicaB.Valid(context.Background(), "made-up"))
	// Output:
	// true
	// false
}
