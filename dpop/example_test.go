package dpop_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

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
