// Command quickstart shows orgauthz end to end in a few seconds.
//
// With no flags it starts the reference server in process on a loopback
// port, seeded with examples/fixtures/acme.json, gets tokens from its token
// endpoint as a real service would from its identity provider, and prints
// what the pep client and the middleware do: checks for two users, a handler
// answering 200, 403 and 401, a DPoP-bound call, and the client failing
// closed while the server's fault injection is on.
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart -gateway http://127.0.0.1:8080   # a running mockserver
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.gateway, "gateway", "", "base URL of a running reference server (default: start one in process)")
	flag.StringVar(&cfg.fixture, "fixture", "examples/fixtures/acme.json", "fixture for the in-process server")
	flag.StringVar(&cfg.adminSecret, "admin-secret", "admin-secret", "secret of the fixture's platform-admin client (fault injection)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

type config struct {
	gateway     string
	fixture     string
	adminSecret string
}

const (
	realm    = "acme"
	clientID = "orders-api"
)

func run(ctx context.Context, out io.Writer, cfg config) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p := printer{out}

	gateway := cfg.gateway
	if gateway == "" {
		url, stop, err := startReferenceServer(cfg.fixture)
		if err != nil {
			return err
		}
		defer stop()
		gateway = url
		p.title("Reference server started in process at %s (fixture %s)", gateway, cfg.fixture)
	} else {
		p.title("Using the reference server at %s", gateway)
	}
	idp := identity{base: gateway, realm: realm}

	// 1. Tokens come from the identity provider, never from orgauthz.
	p.section("1. Tokens from the token endpoint (password grant, client admin-cli)")
	tokens := map[string]string{}
	for _, user := range []string{"bob", "carol", "erin"} {
		tok, err := idp.password(ctx, user, user)
		if err != nil {
			return err
		}
		tokens[user] = tok
		p.line("%-6s got a Bearer token (%d bytes)", user, len(tok))
	}

	client, err := pep.New(gateway, realm, clientID, pep.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}

	// 2. The four client calls, for two users.
	for _, user := range []string{"bob", "carol"} {
		if err := showCalls(pep.WithToken(ctx, tokens[user]), p, client, user); err != nil {
			return err
		}
	}

	// 3. The middleware in front of a handler.
	if err := showMiddleware(ctx, p, client, tokens); err != nil {
		return err
	}

	// 4. A DPoP-bound token.
	if err := showDPoP(ctx, p, gateway, idp); err != nil {
		return err
	}

	// 5. Failing closed.
	if err := showFailClosed(ctx, p, gateway, cfg.adminSecret, tokens["bob"]); err != nil {
		return err
	}
	p.section("Done. Run the tests with: go test -race ./...")
	return nil
}

// showCalls runs Check, CheckMany, ListGranted and Organizations as user.
func showCalls(ctx context.Context, p printer, client *pep.Client, user string) error {
	p.section("2. Client calls as %s", user)

	d, err := client.Check(ctx, "orders", "read")
	if err != nil {
		return err
	}
	p.line("Check orders:read            -> %s (allowed: %t)", d.Status, d.Allowed())

	res, err := client.CheckMany(ctx, []pep.Resource{
		{Name: "orders", Scopes: []string{"read", "write", "delete"}},
		{Name: "invoices", Scopes: []string{"read"}},
	}, pep.WithRequestContext(pep.RequestContext{Method: http.MethodDelete, Path: "/orders/42"}))
	if err != nil {
		return err
	}
	p.line("CheckMany (as DELETE /orders/42) -> %s", res.Status)
	for _, d := range res.Decisions {
		cached := ""
		if d.Cached {
			cached = "  (from cache)"
		}
		p.line("    %-9s %-7s %s%s", d.Resource, d.Scope, d.Status, cached)
	}

	granted, err := client.ListGranted(ctx, nil)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(granted))
	for _, g := range granted {
		names = append(names, g.Resource+":"+g.Scope)
	}
	p.line("ListGranted (every resource) -> %s", orNone(strings.Join(names, ", ")))

	org, err := client.Organizations(ctx)
	if err != nil {
		return err
	}
	p.line("Organizations                -> %d tenant(s)", len(org.Tenants))
	for _, t := range org.Tenants {
		depts := make([]string, 0, len(t.Departments))
		for _, d := range t.Departments {
			depts = append(depts, d.Name)
		}
		p.line("    %s: %s", t.Name, orNone(strings.Join(depts, ", ")))
	}
	return nil
}

// showMiddleware protects a handler and calls it as three callers.
func showMiddleware(ctx context.Context, p printer, client *pep.Client, tokens map[string]string) error {
	p.section(`3. middleware.Require(client, "orders", "write") in front of PUT /orders/{id}`)
	mux := http.NewServeMux()
	mux.Handle("PUT /orders/{id}", middleware.Require(client, "orders", "write")(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprintf(w, "order %s updated", r.PathValue("id"))
		})))
	svc := httptest.NewServer(mux)
	defer svc.Close()

	for _, who := range []string{"carol", "erin", "nobody"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, svc.URL+"/orders/42", nil)
		if err != nil {
			return err
		}
		if tok, ok := tokens[who]; ok {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := svc.Client().Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		p.line("%-6s -> %d %s", who, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// showDPoP gets a token bound to a fresh key and uses it.
func showDPoP(ctx context.Context, p printer, gateway string, idp identity) error {
	p.section("4. A DPoP-bound token (RFC 9449): a fresh proof of the key on every request")
	signer, err := dpop.GenerateKey()
	if err != nil {
		return err
	}
	proof, err := signer.Proof(http.MethodPost, idp.tokenURL(), "", "")
	if err != nil {
		return err
	}
	token, err := idp.token(ctx, url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"carol"}, "password": {"carol"}}, http.Header{"Dpop": {proof}})
	if err != nil {
		return err
	}
	p.line("carol got a token bound to an %s key", signer.Algorithm())

	client, err := pep.New(gateway, realm, clientID)
	if err != nil {
		return err
	}
	client.SetDPoPToken(token, signer)
	d, err := client.Check(ctx, "orders", "write")
	if err != nil {
		return err
	}
	p.line("Check orders:write with DPoP   -> %s", d.Status)

	client.SetToken(token) // the same token without its key, as a thief would use it
	_, err = client.Check(ctx, "orders", "write")
	p.line("the same token sent as Bearer  -> refused (ErrUnauthorized: %t)", errors.Is(err, pep.ErrUnauthorized))
	return nil
}

// showFailClosed turns the reference server's fault injection on and shows
// the client denying, with the reason, instead of letting callers through.
func showFailClosed(ctx context.Context, p printer, gateway, adminSecret, token string) error {
	p.section("5. Failing closed: every decision call now answers 503 (decisionFailureRate 1)")
	admin, err := identity{base: gateway, realm: "master"}.clientCredentials(ctx, "platform-admin", adminSecret)
	if err != nil {
		return fmt.Errorf("platform admin token (set -admin-secret): %w", err)
	}
	if err := putConfig(ctx, gateway, admin, `{"decisionFailureRate": 1}`); err != nil {
		return err
	}
	defer func() { _ = putConfig(context.WithoutCancel(ctx), gateway, admin, `{}`) }()

	// A fresh client, so no cached answer hides the outage; short retries.
	client, err := pep.New(gateway, realm, clientID, pep.WithRetry(2, 10*time.Millisecond, 50*time.Millisecond), pep.WithBreaker(3, time.Minute))
	if err != nil {
		return err
	}
	client.SetToken(token)
	for i := 1; i <= 4; i++ {
		start := time.Now()
		d, err := client.Check(ctx, "orders", "read")
		if err != nil {
			return err
		}
		p.line("Check %d -> %s (allowed: %t) in %s, cause: %v", i, d.Status, d.Allowed(), time.Since(start).Round(time.Millisecond), d.Cause)
	}
	st := client.Stats()
	p.line("Stats: %d calls, %d gateway requests, %d retries, %d fail-closed denials, breaker %s",
		st.Calls, st.GatewayRequests, st.Retries, st.FailClosed, st.Breaker)
	return nil
}

// startReferenceServer runs the reference server on a loopback port.
func startReferenceServer(fixture string) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	url = "http://" + ln.Addr().String()
	srv, err := mockserver.New(mockserver.WithFixtureFile(fixture), mockserver.WithIssuer(url))
	if err != nil {
		_ = ln.Close()
		if errors.Is(err, os.ErrNotExist) {
			return "", nil, fmt.Errorf("%w (run the quickstart from the repository root, or pass -fixture)", err)
		}
		return "", nil, err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return url, func() { _ = hs.Close() }, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// printer writes the transcript.
type printer struct{ w io.Writer }

func (p printer) title(format string, args ...any) { fmt.Fprintf(p.w, format+"\n", args...) }
func (p printer) section(format string, args ...any) {
	fmt.Fprintf(p.w, "\n"+format+"\n", args...)
}
func (p printer) line(format string, args ...any) { fmt.Fprintf(p.w, "  "+format+"\n", args...) }
