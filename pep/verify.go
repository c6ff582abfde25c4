package pep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/telemetry"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// Errors of Verify, each naming the setting of New to fix.
var (
	// ErrWrongGatewayURL means the gateway has no decision route where the
	// client looks for one: the gateway URL (often its path prefix) is
	// wrong.
	ErrWrongGatewayURL = errors.New("pep: the gateway URL is wrong: the gateway has no authorization-decision-provider there")
	// ErrUnknownRealm means the gateway does not know the realm.
	ErrUnknownRealm = errors.New("pep: the realm is unknown to the gateway")
	// ErrUnknownClient means the gateway does not know the client ID in
	// the realm.
	ErrUnknownClient = errors.New("pep: the client ID is unknown in the realm")
)

// Verify checks once, at start-up, that the gateway URL, the realm and the
// client ID given to New are right, by asking the gateway's decision route
// for one pair no client defines (verifyPair), whose answer is not cached:
// any well-formed decision answer (an ERROR for that pair, as a rule)
// proves the route, the realm and the client, whatever the client's size.
// It returns nil when they are, and otherwise an error that says
// which one is wrong: ErrWrongGatewayURL, ErrUnknownRealm or
// ErrUnknownClient; ErrUnavailable when the gateway cannot be reached;
// ErrNoToken without a token; a *ResponseError matching ErrUnauthorized
// when the realm exists but the token was refused, which is handled as on
// every call: the token's cached decisions are purged (on every replica,
// with WithInvalidator) and, for the client's own token, tokenExpired is
// emitted, once per token however many calls are refused, so a
// tokenExpired handler may call Verify. It needs the token the calls will
// use: the client's, or a per-call one given with WithToken.
func (c *Client) Verify(ctx context.Context) (err error) {
	tel := c.core.Telemetry()
	ctx, span := tel.StartCall(ctx, "pep.Verify", 0, 0)
	defer func() { tel.EndCall(span, telemetry.OutcomeOfErr(err), err) }()
	var cl call
	if err := c.newCall(ctx, &callConfig{noCache: true}, &cl); err != nil {
		return err
	}
	// Through core's Exchange, as every request that carries the token: a
	// 401 purges the token's decisions and emits tokenExpired as it does
	// for any other call.
	return c.core.Exchange(ctx, &cl.Call, func(ctx context.Context, post core.Poster) error {
		probe := []pair{verifyPair}
		data, err := post(c.authorizeURL, authorizeBody(c.clientID, probe, noContext), nil)
		var re *ResponseError
		switch {
		case err == nil:
			if _, err := decodeAnswer(data, probe); err != nil {
				return fmt.Errorf("pep: the gateway's answer is not a decision (is the gateway URL right?): %w", err)
			}
			return nil
		case !errors.As(err, &re):
			return err // unreachable, timed out, the breaker open
		case re.StatusCode == http.StatusNotFound:
			if c.realmKnown(ctx, c.realm) != realmKnown && c.realmKnown(ctx, "master") == realmKnown {
				return fmt.Errorf("%w: %w", ErrUnknownRealm, err)
			}
			return fmt.Errorf("%w: %w", ErrWrongGatewayURL, err)
		case re.StatusCode == http.StatusUnauthorized:
			if c.realmKnown(ctx, c.realm) == realmUnknown && c.realmKnown(ctx, "master") == realmKnown {
				return fmt.Errorf("%w: %w", ErrUnknownRealm, err)
			}
			return err
		case re.StatusCode == http.StatusBadRequest && transport.NamesClient(re):
			return fmt.Errorf("%w: %w", ErrUnknownClient, err)
		}
		return err
	})
}

// verifyPair is the question Verify asks: the narrowest that proves the
// route, one pair of a resource no client is expected to define. A
// question about every pair of the client ("*") would be read with
// ListGranted's bounds (10,000 pairs, 1 MiB), which a large client
// configured rightly can pass.
var verifyPair = pair{resource: "orgauthz-verify", scope: "verify"}

type realmVerdict uint8

const (
	realmUnsure realmVerdict = iota
	realmKnown
	realmUnknown
)

// realmKnown asks the gateway's identity side whether a realm exists, by
// its OpenID discovery document (public, no token): 200 is a known realm,
// 404 an unknown one, anything else leaves it open. Asked of "master", the
// realm every Keycloak has, it tells a wrong realm from a wrong URL.
func (c *Client) realmKnown(ctx context.Context, realm string) realmVerdict {
	url := c.gatewayURL + "/realms/" + neturl.PathEscape(realm) + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return realmUnsure
	}
	resp, err := c.core.Fetch(req)
	if err != nil {
		return realmUnsure
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, transport.MaxBody))
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return realmKnown
	case http.StatusNotFound:
		return realmUnknown
	}
	return realmUnsure
}
