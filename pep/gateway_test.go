package pep_test

// A stand-in gateway for faults on demand, kept for the tests of
// hostile_test.go that still use it. Every other test of this package runs
// against the reference server (reference_test.go) and injects a fault the
// server cannot make with a hook in front of it; new tests should do the
// same, or use faultGateway (faults_test.go) when no real answer is needed.
//
// What it offers those tests: opaque tokens that a test can revoke at any
// moment (revoke), a hook that answers, holds or counts requests in the
// gateway's place (setHook, count), and a DPoP-bound token (dpopGateway).
// It decides named pairs of realm acme, client orders-api: orders (read,
// write, delete) and invoices (read, pay); alice may read orders and
// invoices, bob may read and write orders. It refuses what it does not
// model (the "*" resource, a resource without scopes) with a 400.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
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

// gatewayCatalog is the stand-in's resources and their scopes.
var gatewayCatalog = map[string][]string{
	"orders":   {"read", "write", "delete"},
	"invoices": {"read", "pay"},
}

type gateway struct {
	*httptest.Server
	// closing is closed before the server shuts down, to free hooks that a
	// test left blocked.
	closing chan struct{}

	verifier *dpop.Verifier // checks the proofs of DPoP-bound tokens

	mu       sync.Mutex
	bound    map[string]string          // DPoP-bound token -> the thumbprint of its key
	grants   map[string]map[string]bool // token -> "resource/scope" -> granted
	requests int                        // how many reached the gateway
	hook     gwHook
}

// newGateway starts the stand-in with alice's and bob's tokens.
func newGateway(t testing.TB) *gateway {
	t.Helper()
	v, err := dpop.NewVerifier()
	require.NoError(t, err)
	g := &gateway{
		closing:  make(chan struct{}),
		verifier: v,
		bound:    map[string]string{},
		grants:   map[string]map[string]bool{},
	}
	g.grant(aliceToken, "orders", "read")
	g.grant(aliceToken, "invoices", "read")
	g.grant(bobToken, "orders", "read", "write")

	mux := http.NewServeMux()
	mux.HandleFunc("POST /realms/"+testRealm+"/authorization-decision-provider/authorize", g.authorize)
	g.Server = httptest.NewServer(g.record(mux))
	t.Cleanup(g.Close)
	t.Cleanup(func() { close(g.closing) }) // runs first
	return g
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

// setHook makes h answer requests in the gateway's place when it chooses to.
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

// dpopGateway returns the stand-in with dpopToken bound to a new key and
// allowed to read orders, and a client holding that token.
func dpopGateway(t *testing.T, opts ...pep.Option) (*gateway, *pep.Client, *recorder) {
	t.Helper()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	g := newGateway(t)
	g.mu.Lock()
	g.bound[dpopToken] = signer.Thumbprint()
	g.mu.Unlock()
	g.grant(dpopToken, "orders", "read")
	rec := &recorder{}
	c := g.newClient(t, append([]pep.Option{pep.WithEventHandler(rec.handle)}, opts...)...)
	c.SetDPoPToken(dpopToken, signer)
	return g, c, rec
}

// authenticate returns the grants of the request's token, or writes a 401
// and returns false. Bearer tokens are looked up; DPoP-bound tokens must
// come with the DPoP scheme and a proof the dpop.Verifier accepts.
func (g *gateway) authenticate(w http.ResponseWriter, r *http.Request) (map[string]bool, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	g.mu.Lock()
	grants, known := g.grants[token]
	jkt, isBound := g.bound[token]
	g.mu.Unlock()
	switch {
	case scheme == "Bearer" && known && !isBound:
		return grants, true
	case scheme == "DPoP" && known && isBound:
		_, err := g.verifier.Verify(r.Context(), dpop.Request{
			Proofs: r.Header.Values("DPoP"), Method: r.Method, URL: g.URL + r.URL.Path,
			AccessToken: token, JKT: jkt,
		})
		if err == nil {
			return grants, true
		}
		w.Header().Set("WWW-Authenticate", g.verifier.Challenge(err))
		writeError(w, http.StatusUnauthorized, "invalid DPoP proof")
		return nil, false
	}
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	writeError(w, http.StatusUnauthorized, "invalid or missing token")
	return nil, false
}

func (g *gateway) authorize(w http.ResponseWriter, r *http.Request) {
	grants, ok := g.authenticate(w, r)
	if !ok {
		return
	}
	var req struct {
		ClientID  string `json:"clientId"`
		Resources []struct {
			Name   string   `json:"name"`
			Scopes []string `json:"scopes"`
		} `json:"resources"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON body")
		return
	}
	if req.ClientID != testClient || len(req.Resources) == 0 {
		writeError(w, http.StatusBadRequest, "an unknown client or no resources")
		return
	}
	type permission struct {
		Resource string `json:"resource"`
		Scope    string `json:"scope"`
		Status   string `json:"status"`
	}
	g.mu.Lock() // grant may change the token's grants meanwhile
	defer g.mu.Unlock()
	var perms []permission
	status := "GRANT"
	seen := map[string]bool{}
	for _, res := range req.Resources {
		if res.Name == "*" || len(res.Scopes) == 0 {
			writeError(w, http.StatusBadRequest, "the stand-in decides named pairs only")
			return
		}
		for _, s := range res.Scopes {
			key := res.Name + "/" + s
			if seen[key] {
				continue
			}
			seen[key] = true
			p := permission{Resource: res.Name, Scope: s, Status: "DENY"}
			switch {
			case !slices.Contains(gatewayCatalog[res.Name], s):
				p.Status = "ERROR"
			case grants[key]:
				p.Status = "GRANT"
			}
			perms = append(perms, p)
			if p.Status == "DENY" || status == "GRANT" {
				status = p.Status
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "permissions": perms})
}
