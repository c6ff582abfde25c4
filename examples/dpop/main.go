// Command dpop shows DPoP-bound tokens (RFC 9449) with orgauthz: the client
// proves on every request that it holds the key its token is bound to, so a
// stolen token is useless on its own.
//
//	go run ./examples/dpop                                  # reference server in process
//	go run ./examples/dpop -gateway http://127.0.0.1:8080   # a running mockserver
//
// The in-process server is seeded with the embedded example fixture
// (package examples/fixtures), so it runs from any directory.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/examples/fixtures"
	"github.com/orgauthz/orgauthz/pep"
)

func main() {
	gateway := flag.String("gateway", "", "base URL of a running reference server (default: start one in process)")
	fixture := flag.String("fixture", "", "fixture file for the in-process server (default: the embedded examples/fixtures/acme.json)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *gateway, *fixture); err != nil {
		fmt.Fprintln(os.Stderr, "dpop example:", err)
		os.Exit(1)
	}
}

// run runs the example against gateway ("" starts the reference server in
// process, seeded with fixture). opts go to the example's pep clients
// after their own settings (the defaults): the tests, beside others on a
// busy machine, give a longer timeout than the 2 s default.
func run(ctx context.Context, out io.Writer, gateway, fixture string, opts ...pep.Option) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if gateway == "" {
		url, stop, err := fixtures.StartReferenceServer(fixture)
		if err != nil {
			return err
		}
		defer stop()
		gateway = url
	}

	// 1. The key the token will be bound to. Any crypto.Signer works
	// (P-256, Ed25519, RSA 2048+), including keys that cannot be exported.
	signer, err := dpop.GenerateKey()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "key: %s, thumbprint (jkt) %d characters\n", signer.Algorithm(), len(signer.Thumbprint()))

	// 2. A token request with a proof gets a DPoP-bound token.
	token, tokenType, err := boundToken(ctx, gateway+"/realms/acme/protocol/openid-connect/token", signer, "carol", "carol")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "token endpoint: token_type %s\n", tokenType)

	// 3. The client sends "Authorization: DPoP" and a fresh proof with
	// every request, retries included.
	client, err := pep.New(gateway, "acme", "orders-api", opts...)
	if err != nil {
		return err
	}
	client.SetDPoPToken(token, signer)
	d, err := client.Check(ctx, "orders", "write")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Check orders:write with DPoP: %s\n", d.Status)

	// 4. The same token without its key is refused.
	thief, err := pep.New(gateway, "acme", "orders-api", opts...)
	if err != nil {
		return err
	}
	thief.SetToken(token)
	_, err = thief.Check(ctx, "orders", "write")
	var re *pep.ResponseError
	if errors.As(err, &re) {
		fmt.Fprintf(out, "the same token as Bearer: %d, unauthorized: %t\n", re.StatusCode, errors.Is(err, pep.ErrUnauthorized))
	} else {
		return fmt.Errorf("a stolen bound token was not refused: %v", err)
	}

	// 5. The server side: dpop.Verifier checks a proof against the request
	// and the token's cnf.jkt, and refuses a replay.
	verifier, err := dpop.NewVerifier()
	if err != nil {
		return err
	}
	api := "https://api.example.com/orders/42"
	proof, err := signer.Proof(http.MethodGet, api, token, "")
	if err != nil {
		return err
	}
	req := dpop.Request{Proofs: []string{proof}, Method: http.MethodGet, URL: api, AccessToken: token, JKT: signer.Thumbprint()}
	if _, err := verifier.Verify(ctx, req); err != nil {
		return err
	}
	fmt.Fprintln(out, "verifier: proof accepted")
	_, err = verifier.Verify(ctx, req)
	fmt.Fprintf(out, "verifier: replayed proof refused: %t, challenge: %s\n", errors.Is(err, dpop.ErrReplay), verifier.Challenge(err))
	return nil
}

// boundToken runs the password grant with a DPoP proof (RFC 9449 section 5).
func boundToken(ctx context.Context, tokenURL string, signer *dpop.Signer, username, password string) (token, tokenType string, err error) {
	proof, err := signer.Proof(http.MethodPost, tokenURL, "", "")
	if err != nil {
		return "", "", err
	}
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {username}, "password": {password}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("DPoP", proof)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return "", "", fmt.Errorf("token endpoint: %s: %w", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("token endpoint: %s: %s", resp.Status, body.Error)
	}
	return body.AccessToken, body.TokenType, nil
}
