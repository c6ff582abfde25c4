// Command quickstart shows orgauthz end to end in a few seconds.
//
// With no flags it starts the reference server in process on a loopback
// port, seeded with the example fixture (package
// github.com/orgauthz/orgauthz/examples/fixtures, embedded, so it runs from
// any directory), gets tokens from its token endpoint as a real service
// would from its identity provider, and prints what the pep client and the
// middleware do: the start-up check of the client's settings, checks for
// two users, a handler answering 200, 403 and 401, a DPoP-bound call, and
// the client failing closed while the server's fault injection is on.
//
//	go run github.com/orgauthz/orgauthz/examples/quickstart
//	go run ./examples/quickstart                                  # in a clone
//	go run ./examples/quickstart -gateway http://127.0.0.1:8080   # a running mockserver
//
// The first go run compiles the module and its dependencies, which takes
// about half a minute; later runs start at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/examples/fixtures"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.gateway, "gateway", "", "base URL of a running reference server (default: start one in process)")
	flag.StringVar(&cfg.fixture, "fixture", "", "fixture file for the in-process server (default: the embedded examples/fixtures/acme.json)")
	flag.StringVar(&cfg.adminSecret, "admin-secret", "admin-secret", "secret of the fixture's platform-admin client (fault injection)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

type config struct {
	gateway     string
	fixture     string // a file; "" is the embedded acme fixture
	adminSecret string
	// clientOptions go to every pep client after its own settings: the
	// tests, beside others on a busy machine, give a longer timeout than
	// the 2 s default.
	clientOptions []pep.Option
}

const (
	realm        = "acme"
	clientID     = "orders-api"
	clientSecret = "orders-secret" // the fixture's; a real service reads it from its secret store
)

func run(ctx context.Context, out io.Writer, cfg config) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p := &printer{w: out}

	gateway := cfg.gateway
	if gateway == "" {
		url, stop, err := fixtures.StartReferenceServer(cfg.fixture)
		if err != nil {
			return err
		}
		defer stop()
		gateway = url
		fixture := cfg.fixture
		if fixture == "" {
			fixture = "examples/fixtures/acme.json, embedded"
		}
		p.title("Reference server started in process at %s (fixture %s)", gateway, fixture)
	} else {
		p.title("Using the reference server at %s", gateway)
	}
	idp := identity{base: gateway, realm: realm}

	// Tokens come from the identity provider, never from orgauthz.
	p.section("Tokens from the token endpoint")
	service, err := idp.clientCredentials(ctx, clientID, clientSecret)
	if err != nil {
		return err
	}
	p.line("%-10s got a Bearer token (client_credentials grant: the service's own)", clientID)
	tokens := map[string]string{}
	for _, user := range []string{"bob", "carol", "erin"} {
		tok, err := idp.password(ctx, user, user)
		if err != nil {
			return err
		}
		tokens[user] = tok
		p.line("%-10s got a Bearer token (password grant, client admin-cli: a caller's)", user)
	}

	client, err := newClient(ctx, p, gateway, service, cfg.clientOptions...)
	if err != nil {
		return err
	}

	// The four client calls, for two users; each call carries the
	// caller's token (pep.WithToken), as a service forwards it.
	for _, user := range []string{"bob", "carol"} {
		if err := showCalls(pep.WithToken(ctx, tokens[user]), p, client, user); err != nil {
			return err
		}
	}

	if err := showMiddleware(ctx, p, client, tokens); err != nil {
		return err
	}
	if err := showDPoP(ctx, p, gateway, idp, cfg.clientOptions...); err != nil {
		return err
	}
	if err := showFailClosed(ctx, p, gateway, cfg.adminSecret, tokens["bob"], cfg.clientOptions...); err != nil {
		return err
	}
	p.section("Done. In a clone of the repository, run the tests with: go test -race github.com/orgauthz/orgauthz/...")
	return nil
}

// newClient makes the service's client with its settings spelt out, and
// checks them against the gateway once, as a service does at start-up;
// opts come after the settings.
func newClient(ctx context.Context, p *printer, gateway, serviceToken string, opts ...pep.Option) (*pep.Client, error) {
	p.section("The client, checked at start-up with Verify")
	settings := []pep.Option{
		// Every call ends within 2 s (its context's deadline if earlier),
		// retries included.
		pep.WithTimeout(2 * time.Second),
		// Up to 2 retries of connection errors, 429, 502, 503 and 504,
		// 25 ms to 400 ms apart.
		pep.WithRetry(2, 25*time.Millisecond, 400*time.Millisecond),
		// GRANTs are cached 30 s and DENYs 10 s, per token.
		pep.WithCache(10_000, 30*time.Second, 10*time.Second),
		// The circuit breaker: after 5 consecutive calls that found the
		// gateway unwell (unreachable, timed out, 502, 503, 504), deny at
		// once for 5 s without calling it, then let one probe through.
		pep.WithBreaker(5, 5*time.Second),
		pep.WithLogger(slog.New(slog.DiscardHandler)),
	}
	client, err := pep.New(gateway, realm, clientID, append(settings, opts...)...)
	if err != nil {
		return nil, err
	}
	p.line("pep.New(%q, %q, %q, timeout 2s, 2 retries, cache 30s/10s, breaker 5 failures/5s)", gateway, realm, clientID)
	client.SetToken(serviceToken)

	// Verify asks the gateway once whether the URL, the realm and the
	// client ID are right; a mistake there would otherwise show as every
	// decision being DENY.
	if err := client.Verify(ctx); err != nil {
		return nil, fmt.Errorf("the client's settings are wrong: %w", err)
	}
	p.result("Verify", "ok: the gateway knows realm %q and client %q", realm, clientID)

	// What Verify says about a misspelt realm. Every call of such a
	// client would get a 401 (the realm does not know the token), which
	// no token refresh can cure.
	typo, err := pep.New(gateway, "acme-eu", clientID, append([]pep.Option{pep.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		return nil, err
	}
	typo.SetToken(serviceToken)
	err = typo.Verify(ctx)
	p.result(`Verify with realm "acme-eu"`, "errors.Is(err, pep.ErrUnknownRealm): %t", errors.Is(err, pep.ErrUnknownRealm))
	return client, nil
}

// showCalls runs Check, CheckMany, ListGranted and Organizations as user.
func showCalls(ctx context.Context, p *printer, client *pep.Client, user string) error {
	p.section("Client calls as %s", user)

	d, err := client.Check(ctx, "orders", "read")
	if err != nil {
		return err
	}
	p.result("Check orders:read", "%s (allowed: %t)", d.Status, d.Allowed())

	// The request context says what the caller is doing: here, deleting
	// an order. A permission may be limited to some methods.
	deleting := pep.WithRequestContext(pep.RequestContext{Method: http.MethodDelete, Path: "/orders/42"})
	res, err := client.CheckMany(ctx, []pep.Resource{
		{Name: "orders", Scopes: []string{"read", "write", "delete"}},
		{Name: "invoices", Scopes: []string{"read"}},
	}, deleting)
	if err != nil {
		return err
	}
	p.result("CheckMany (as DELETE /orders/42)", "%s", res.Status)
	for _, d := range res.Decisions {
		cached := ""
		if d.Cached {
			cached = "  (from cache)"
		}
		p.line("    %-9s %-7s %s%s", d.Resource, d.Scope, d.Status, cached)
	}

	// ListGranted without a request context: a permission limited to
	// some methods cannot apply, so its pairs are not listed.
	granted, err := client.ListGranted(ctx, nil)
	if err != nil {
		return err
	}
	p.result("ListGranted (no context)", "%s", permissions(granted))
	granted, err = client.ListGranted(ctx, nil, deleting)
	if err != nil {
		return err
	}
	p.result("ListGranted (as DELETE /orders/42)", "%s", permissions(granted))

	org, err := client.Organizations(ctx)
	if err != nil {
		return err
	}
	p.result("Organizations", "%d tenant(s)", len(org.Tenants))
	for _, t := range org.Tenants {
		depts := make([]string, 0, len(t.Departments))
		for _, d := range t.Departments {
			depts = append(depts, d.Name)
		}
		p.line("    %s: %s", t.Name, orNone(strings.Join(depts, ", ")))
	}
	if user == "carol" {
		p.line("Why orders:delete is GRANT in CheckMany but missing from the first ListGranted: the")
		p.line("fixture's permission \"managers delete orders, only with DELETE\" lists methods [\"DELETE\"],")
		p.line("so it grants only to a decision whose request context says DELETE. CheckMany and the")
		p.line("second ListGranted sent DELETE /orders/42; the first ListGranted sent no context.")
	}
	return nil
}

// permissions lists granted pairs as resource:scope.
func permissions(granted []pep.Permission) string {
	names := make([]string, 0, len(granted))
	for _, g := range granted {
		names = append(names, g.Resource+":"+g.Scope)
	}
	return orNone(strings.Join(names, ", "))
}

// showMiddleware protects a handler and calls it as three callers.
func showMiddleware(ctx context.Context, p *printer, client *pep.Client, tokens map[string]string) error {
	p.section(`middleware.Require(client, "orders", "write") in front of PUT /orders/{id}`)
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
func showDPoP(ctx context.Context, p *printer, gateway string, idp identity, opts ...pep.Option) error {
	p.section("A DPoP-bound token (RFC 9449): a fresh proof of the key on every request")
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

	client, err := pep.New(gateway, realm, clientID, opts...)
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
func showFailClosed(ctx context.Context, p *printer, gateway, adminSecret, token string, opts ...pep.Option) error {
	p.section("Failing closed: every decision call now answers 503 (decisionFailureRate 1)")
	admin, err := identity{base: gateway, realm: "master"}.clientCredentials(ctx, "platform-admin", adminSecret)
	if err != nil {
		return fmt.Errorf("platform admin token (set -admin-secret): %w", err)
	}
	if err := putConfig(ctx, gateway, admin, `{"decisionFailureRate": 1}`); err != nil {
		return err
	}
	defer func() { _ = putConfig(context.WithoutCancel(ctx), gateway, admin, `{}`) }()

	// A fresh client, so no cached answer hides the outage, with short
	// retries and a breaker that opens after 3 consecutive calls that
	// found the gateway unwell and then denies at once, without calling
	// it, for a minute (the default is 5 calls and 5 s).
	client, err := pep.New(gateway, realm, clientID, append([]pep.Option{
		pep.WithRetry(2, 10*time.Millisecond, 50*time.Millisecond),
		pep.WithBreaker(3, time.Minute)}, opts...)...)
	if err != nil {
		return err
	}
	p.line("a new client with pep.WithBreaker(3, time.Minute): after 3 failed calls, deny at once for 1m")
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

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// printer writes the transcript; it numbers the sections.
type printer struct {
	w        io.Writer
	sections int // sections started so far
}

func (p *printer) title(format string, args ...any) { fmt.Fprintf(p.w, format+"\n", args...) }

// section starts the next numbered section; a title that starts with
// "Done" is not numbered.
func (p *printer) section(format string, args ...any) {
	if !strings.HasPrefix(format, "Done") {
		p.sections++
		format = fmt.Sprintf("%d. ", p.sections) + format
	}
	fmt.Fprintf(p.w, "\n"+format+"\n", args...)
}

func (p *printer) line(format string, args ...any) { fmt.Fprintf(p.w, "  "+format+"\n", args...) }

// result writes "label -> what", the arrows aligned.
func (p *printer) result(label, format string, args ...any) {
	p.line("%-34s -> %s", label, fmt.Sprintf(format, args...))
}
