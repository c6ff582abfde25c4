package pep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// OrganizationContext is the caller's organization context, as returned by
// the gateway's get-organizations operation.
type OrganizationContext struct {
	UserID  string
	Tenants []Tenant
}

// Tenant is one organization the caller is assigned in.
type Tenant struct {
	ID          string
	Name        string
	Departments []Department
}

// Department is a department of a Tenant the caller is assigned to.
type Department struct {
	ID   string
	Name string
}

type wireOrganizationsRequest struct {
	ClientID string `json:"clientId"`
}

type wireOrganizationsResponse struct {
	Status       *bool `json:"status"`
	Organization *struct {
		UserID  string `json:"userId"`
		Tenants []struct {
			TenantID    string `json:"tenantId"`
			TenantName  string `json:"tenantName"`
			Departments []struct {
				DepartmentID   string `json:"departmentId"`
				DepartmentName string `json:"departmentName"`
			} `json:"departments"`
		} `json:"tenants"`
	} `json:"organization"`
}

// Organizations returns the organization context of the token's subject.
// There is no decision to deny, so it does not fail closed: every failure is
// an error. Transport failures, timeouts and an open breaker match
// ErrUnavailable; other gateway answers are a *ResponseError (a 401 matches
// ErrUnauthorized and is handled as in Check); a missing token is
// ErrNoToken. It uses neither the cache nor coalescing.
func (c *Client) Organizations(ctx context.Context) (OrganizationContext, error) {
	c.calls.Add(1)
	var cl call
	if err := c.newCall(ctx, &callConfig{}, &cl); err != nil {
		return OrganizationContext{}, err
	}
	cred, err := cl.credential()
	if err != nil {
		return OrganizationContext{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, err := json.Marshal(wireOrganizationsRequest{ClientID: c.clientID})
	if err != nil {
		return OrganizationContext{}, fmt.Errorf("pep: encoding the request: %w", err)
	}
	data, err := c.exchange(ctx, cred, c.organizationsURL, body)
	if err != nil {
		var refusal *ResponseError
		if asRefusal(err, &refusal) {
			c.refused(&cl, refusal)
		}
		return OrganizationContext{}, err
	}
	return parseOrganizations(data)
}

func parseOrganizations(data []byte) (OrganizationContext, error) {
	if len(data) > maxBody {
		return OrganizationContext{}, malformed("the body exceeds %d bytes", maxBody)
	}
	var w wireOrganizationsResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return OrganizationContext{}, malformed("the body does not parse: %v", err)
	}
	switch {
	case w.Status == nil || w.Organization == nil:
		return OrganizationContext{}, malformed("status or organization is missing")
	case !*w.Status:
		return OrganizationContext{}, malformed("the gateway reported status false")
	}
	oc := OrganizationContext{UserID: w.Organization.UserID, Tenants: []Tenant{}}
	for _, t := range w.Organization.Tenants {
		tenant := Tenant{ID: t.TenantID, Name: t.TenantName, Departments: []Department{}}
		for _, d := range t.Departments {
			tenant.Departments = append(tenant.Departments, Department{ID: d.DepartmentID, Name: d.DepartmentName})
		}
		oc.Tenants = append(oc.Tenants, tenant)
	}
	return oc, nil
}

// newPost makes a JSON POST whose body can be replayed for retries.
func newPost(ctx context.Context, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("pep: building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// asRefusal reports whether err is a 401 answer and sets *target to it.
func asRefusal(err error, target **ResponseError) bool {
	return errors.As(err, target) && (*target).StatusCode == http.StatusUnauthorized
}
