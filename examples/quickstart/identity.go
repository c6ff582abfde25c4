package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// identity gets tokens from a realm's token endpoint, as a service gets them
// from its identity provider. orgauthz itself never acquires tokens.
type identity struct {
	base  string
	realm string
}

func (id identity) tokenURL() string {
	return id.base + "/realms/" + id.realm + "/protocol/openid-connect/token"
}

// password runs the password grant with the public client admin-cli.
func (id identity) password(ctx context.Context, username, password string) (string, error) {
	return id.token(ctx, url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {username}, "password": {password}}, nil)
}

// clientCredentials runs the client_credentials grant.
func (id identity) clientCredentials(ctx context.Context, clientID, secret string) (string, error) {
	return id.token(ctx, url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID},
		"client_secret": {secret}}, nil)
}

// token posts a token request; header adds request headers (a DPoP proof).
func (id identity) token(ctx context.Context, form url.Values, header http.Header) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, id.tokenURL(), strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return "", fmt.Errorf("token endpoint: %s: %w", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || body.AccessToken == "" {
		return "", fmt.Errorf("token endpoint: %s: %s %s", resp.Status, body.Error, body.Description)
	}
	return body.AccessToken, nil
}

// putConfig replaces the reference server's platform configuration.
func putConfig(ctx context.Context, base, adminToken, config string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/admin/config", strings.NewReader(config))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("PUT /admin/config: %s: %s", resp.Status, b)
	}
	return nil
}
