package pep_test

// A small, faithful fake of the gateway's authorization-decision-provider
// (ARCHITECTURE.md section 4, SERVICE.md section 6), served over real HTTP.
// It stands in for the reference server (package mockserver) until that one
// is ready, and is kept in this file alone so that it can be swapped out.

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/pep"
)

const (
	aliceToken = "alice-token.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
	bobToken   = "bob-token.eyJzdWIiOiJib2IifQ.c2lnbmF0dXJl"
	dpopToken  = "dpop-bound-token.eyJjbmYiOnsiamt0IjoiLi4uIn19.c2ln"
)

type gwPermission struct {
	Resource string `json:"resource"`
	Scope    string `json:"scope"`
	Status   string `json:"status"`
}

type gateway struct {
	*httptest.Server
	// closing is closed before the server shuts down, to free handlers
	// that a test left blocked.
	closing chan struct{}

	verifier *dpop.Verifier // checks the proofs of DPoP-bound tokens

	mu       sync.Mutex
	bound    map[string]string          // DPoP-bound token -> the thumbprint of its key
	catalog  map[string][]string        // resource -> defined scopes, in order
	order    []string                   // resources in definition order
	grants   map[string]map[string]bool // token -> "resource/scope" -> granted
	requests int                        // how many reached the gateway
	hook     gwHook
}

// newGateway starts a fake gateway for realm acme and client orders-api.
// Resources: orders (read, write, delete) and invoices (read, pay). alice
// may read orders and invoices; bob may read and write orders.
func newGateway(t testing.TB) *gateway {
	t.Helper()
	g := &gateway{
		closing: make(chan struct{}),
		catalog: map[string][]string{},
		grants:  map[string]map[string]bool{},
		bound:   map[string]string{},
	}
	v, err := dpop.NewVerifier()
	require.NoError(t, err)
	g.verifier = v
	g.define("orders", "read", "write", "delete")
	g.define("invoices", "read", "pay")
	g.grant(aliceToken, "orders", "read")
	g.grant(aliceToken, "invoices", "read")
	g.grant(bobToken, "orders", "read", "write")

	mux := http.NewServeMux()
	prefix := "/realms/" + testRealm + "/authorization-decision-provider"
	mux.HandleFunc("POST "+prefix+"/authorize", g.authorize)
	mux.HandleFunc("POST "+prefix+"/get-organizations", g.organizations)
	g.Server = httptest.NewServer(g.record(mux))
	t.Cleanup(g.Close)
	t.Cleanup(func() { close(g.closing) }) // runs first
	return g
}

// define adds a resource with its scopes to the client's catalog.
func (g *gateway) define(resource string, scopes ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.catalog[resource]; !ok {
		g.order = append(g.order, resource)
	}
	g.catalog[resource] = append(g.catalog[resource], scopes...)
}

// grant makes token valid and grants it the scopes on resource.
func (g *gateway) grant(token, resource string, scopes ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.grants[token] == nil {
		g.grants[token] = map[string]bool{}
	}
	for _, s := range scopes {
		g.grants[token][resource+"/"+s] = true
	}
}

// revoke makes token unknown: the gateway answers 401 to it.
func (g *gateway) revoke(token string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.grants, token)
}

func (g *gateway) setHook(h gwHook) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hook = h
}

// count returns how many requests reached the gateway.
func (g *gateway) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests
}

// newClient returns a pep client for this gateway using the server's own
// *http.Client, so that its connections close with the server.
func (g *gateway) newClient(t testing.TB, opts ...pep.Option) *pep.Client {
	t.Helper()
	all := append([]pep.Option{pep.WithHTTPClient(g.Client())}, opts...)
	c, err := pep.New(g.URL, testRealm, testClient, all...)
	require.NoError(t, err)
	return c
}

// record counts every request, then lets the hook or the real handler
// answer.
func (g *gateway) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.requests++
		n, hook := g.requests, g.hook
		g.mu.Unlock()
		if hook != nil && hook(w, r, n) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bindDPoP makes token a DPoP-bound token of the key with thumbprint jkt:
// it is accepted only as "Authorization: DPoP" with a valid proof.
func (g *gateway) bindDPoP(token, jkt string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bound[token] = jkt
	if g.grants[token] == nil {
		g.grants[token] = map[string]bool{}
	}
}

// dpopGateway returns a fake gateway where dpopToken is bound to a new key
// and may read orders, and a client holding that token.
func dpopGateway(t *testing.T, opts ...pep.Option) (*gateway, *pep.Client, *recorder) {
	t.Helper()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	g := newGateway(t)
	g.bindDPoP(dpopToken, signer.Thumbprint())
	g.grant(dpopToken, "orders", "read")
	rec := &recorder{}
	c := g.newClient(t, append([]pep.Option{pep.WithEventHandler(rec.handle)}, opts...)...)
	c.SetDPoPToken(dpopToken, signer)
	return g, c, rec
}

// authenticate returns the grants of the request's token, or writes a 401
// and returns false. Bearer tokens are looked up; DPoP-bound tokens must
// come with the DPoP scheme and a proof the dpop.Verifier accepts.
func (g *gateway) authenticate(w http.ResponseWriter, r *http.Request) (map[string]bool, string, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	g.mu.Lock()
	grants, known := g.grants[token]
	jkt, isBound := g.bound[token]
	g.mu.Unlock()
	switch {
	case scheme == "Bearer" && known && !isBound:
		return grants, token, true
	case scheme == "DPoP" && known && isBound:
		_, err := g.verifier.Verify(r.Context(), dpop.Request{
			Proofs: r.Header.Values("DPoP"), Method: r.Method, URL: g.URL + r.URL.Path,
			AccessToken: token, JKT: jkt,
		})
		if err == nil {
			return grants, token, true
		}
		var ne *dpop.NonceError
		if errors.As(err, &ne) {
			w.Header().Set("DPoP-Nonce", ne.Nonce)
		}
		w.Header().Set("WWW-Authenticate", g.verifier.Challenge(err))
		writeError(w, http.StatusUnauthorized, "invalid DPoP proof")
		return nil, "", false
	}
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	writeError(w, http.StatusUnauthorized, "invalid or missing token")
	return nil, "", false
}

func (g *gateway) authorize(w http.ResponseWriter, r *http.Request) {
	grants, _, ok := g.authenticate(w, r)
	if !ok {
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeError(w, http.StatusBadRequest, "content type must be application/json")
		return
	}
	var req struct {
		ClientID  *string `json:"clientId"`
		Resources []struct {
			Name   string   `json:"name"`
			Scopes []string `json:"scopes"`
		} `json:"resources"`
		Context json.RawMessage `json:"context"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON body")
		return
	}
	switch {
	case req.ClientID == nil || *req.ClientID != testClient:
		writeError(w, http.StatusBadRequest, "missing or unknown clientId")
		return
	case len(req.Resources) == 0:
		writeError(w, http.StatusBadRequest, "the resources array cannot be empty")
		return
	case len(req.Resources) > 100:
		writeError(w, http.StatusBadRequest, "more than 100 resources")
		return
	case len(req.Context) == 0 || req.Context[0] != '{':
		writeError(w, http.StatusBadRequest, "context must be an object")
		return
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	var perms []gwPermission
	seen := map[string]bool{}
	add := func(resource, scope string) {
		key := resource + "/" + scope
		if seen[key] {
			return
		}
		seen[key] = true
		status := "DENY"
		switch {
		case !contains(g.catalog[resource], scope):
			status = "ERROR"
		case grants[key]:
			status = "GRANT"
		}
		perms = append(perms, gwPermission{Resource: resource, Scope: scope, Status: status})
	}
	for _, res := range req.Resources {
		switch {
		case res.Name == "":
			writeError(w, http.StatusBadRequest, "a resource has no name")
			return
		case len(res.Scopes) > 50:
			writeError(w, http.StatusBadRequest, "more than 50 scopes for resource "+res.Name)
			return
		}
		names := []string{res.Name}
		if res.Name == "*" {
			names = g.order
		}
		for _, name := range names {
			if len(res.Scopes) == 0 { // every scope defined on the resource
				for _, s := range g.catalog[name] {
					add(name, s)
				}
				continue
			}
			for _, s := range res.Scopes {
				if res.Name == "*" && !contains(g.catalog[name], s) {
					continue // "*" expands only to resources that define s
				}
				add(name, s)
			}
		}
	}
	status := "GRANT"
	for _, p := range perms {
		if p.Status == "DENY" {
			status = "DENY"
			break
		}
		if p.Status == "ERROR" {
			status = "ERROR"
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "permissions": perms})
}

func (g *gateway) organizations(w http.ResponseWriter, r *http.Request) {
	_, token, ok := g.authenticate(w, r)
	if !ok {
		return
	}
	org := map[string]any{"userId": token[:strings.IndexByte(token, '-')], "tenants": []any{}}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "organization": org})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
