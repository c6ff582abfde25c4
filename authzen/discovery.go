package authzen

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/strictjson"
	"github.com/orgauthz/orgauthz/internal/transport"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// wireMetadata is the part of the PDP metadata the client reads.
type wireMetadata struct {
	PDP            string `json:"policy_decision_point"`
	Evaluation     string `json:"access_evaluation_endpoint"`
	Evaluations    string `json:"access_evaluations_endpoint"`
	SearchSubject  string `json:"search_subject_endpoint"`
	SearchResource string `json:"search_resource_endpoint"`
	SearchAction   string `json:"search_action_endpoint"`
}

// Discover reads the PDP's metadata from its
// /.well-known/authzen-configuration (inserted between the host and the
// path of the PDP URL, as the specification says) unless the endpoints
// were given with WithEndpoints or already read. Calls do it themselves
// when needed; Discover lets a service check the PDP at start-up. The
// metadata must name the PDP URL given to New as policy_decision_point, and
// endpoints on the PDP URL's own scheme, host and port (the client sends
// its credential there), else it is not used (ErrDiscovery). Discovery is
// bounded by the client's timeout and by ctx; a caller waiting for another
// caller's discovery stops waiting when its own ctx ends.
func (c *Client) Discover(ctx context.Context) error {
	if c.core.Closed() {
		return pdp.Err(transport.ErrClosed)
	}
	_, err := c.resolveEndpoints(ctx)
	return err
}

// resolveEndpoints returns the endpoints, discovering them once they are
// needed. A failed discovery is tried again by the next call.
func (c *Client) resolveEndpoints(ctx context.Context) (*Endpoints, error) {
	if ep := c.endpoints.Load(); ep != nil {
		return ep, nil
	}
	select {
	case c.discovering <- struct{}{}: // one discovery at a time
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, pdp.Unavailable(ctx.Err()))
	}
	defer func() { <-c.discovering }()
	if ep := c.endpoints.Load(); ep != nil {
		return ep, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.core.Timeout())
	defer cancel()
	ep, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	c.endpoints.Store(ep)
	return ep, nil
}

func (c *Client) discover(ctx context.Context) (*Endpoints, error) {
	u, _ := url.Parse(c.pdpURL) // checked by New
	u.Path = "/.well-known/authzen-configuration" + u.Path
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.core.Fetch(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, pdp.Unavailable(err))
	}
	defer resp.Body.Close()
	data, err := transport.ReadBody(resp.Body, resp.ContentLength)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, pdp.Unavailable(err))
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		// The zero Ident: no credential was sent, so this refuses no token.
		return nil, fmt.Errorf("%w: %w; the document is read without a credential: make it public, or give the endpoints with WithEndpoints",
			ErrDiscovery, pdp.NewResponseError(resp, data, transport.Ident{}))
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, pdp.NewResponseError(resp, data, transport.Ident{}))
	case len(data) > transport.MaxBody:
		return nil, fmt.Errorf("%w: the document exceeds %d bytes", ErrDiscovery, transport.MaxBody)
	}
	var m wireMetadata
	if err := strictjson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: the document is not a strict JSON object of strings", ErrDiscovery)
	}
	if m.PDP != c.pdpURL && m.PDP != c.pdpURL+"/" {
		return nil, fmt.Errorf("%w: its policy_decision_point is not the PDP URL the client was given", ErrDiscovery)
	}
	pu, _ := url.Parse(c.pdpURL) // checked by New
	e := Endpoints{Evaluation: m.Evaluation, Evaluations: m.Evaluations, SearchSubject: m.SearchSubject,
		SearchResource: m.SearchResource, SearchAction: m.SearchAction}
	for _, p := range []string{e.Evaluation, e.Evaluations, e.SearchSubject, e.SearchResource, e.SearchAction} {
		if p == "" {
			continue
		}
		if _, err := core.ParseURL(p, pdp); err != nil {
			return nil, fmt.Errorf("%w: an endpoint is not an absolute http(s) URL", ErrDiscovery)
		}
		eu, _ := url.Parse(p) // parsed by core.ParseURL
		// The credential goes to every endpoint: a document that moved one
		// to another origin (another host, or http for an https PDP) would
		// hand it to whoever is there.
		if !ascii.EqualFold(eu.Scheme, pu.Scheme) || !ascii.EqualFold(eu.Host, pu.Host) {
			return nil, fmt.Errorf("%w: an endpoint is not on the PDP's own origin %s://%s; give endpoints elsewhere with WithEndpoints", ErrDiscovery, pu.Scheme, pu.Host)
		}
	}
	return &e, nil
}
