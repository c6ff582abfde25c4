package pep

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/strictjson"
	"github.com/orgauthz/orgauthz/internal/telemetry"
)

// OrganizationContext is the caller's organization context, as returned by
// the gateway's get-organizations operation.
type OrganizationContext struct {
	UserID  string
	Tenants []Tenant
}

// Tenant is one organization the caller is assigned in. Departments, the
// departments the caller is assigned to there, is an extension of the
// service specification (whose tenants carry only an id and a name): it is
// empty when the gateway does not send it.
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

// Organizations returns the organization context of the token's subject.
// There is no decision to deny, so it does not fail closed: every failure is
// an error. Transport failures, timeouts and an open breaker match
// ErrUnavailable; other gateway answers are a *ResponseError (a 401 matches
// ErrUnauthorized, or ErrProofRejected when it blames the DPoP proof, and
// is handled as in Check); an answer that is not read
// completely and strictly (see the package documentation) wraps
// ErrMalformedResponse (so does one listing more than 10,000 tenants and
// departments); a missing token is ErrNoToken. It uses neither the cache
// nor coalescing.
func (c *Client) Organizations(ctx context.Context) (oc OrganizationContext, err error) {
	c.core.CountCall()
	tel := c.core.Telemetry()
	ctx, span := tel.StartCall(ctx, "pep.Organizations", 0, 0)
	defer func() { tel.EndCall(span, telemetry.OutcomeOfErr(err), err) }()
	var cl call
	if err := c.newCall(ctx, &callConfig{}, &cl); err != nil {
		return OrganizationContext{}, err
	}
	err = c.core.Exchange(ctx, &cl.Call, func(_ context.Context, post core.Poster) error {
		body, err := json.Marshal(wireOrganizationsRequest{ClientID: c.clientID})
		if err != nil {
			return fmt.Errorf("pep: encoding the request: %w", err)
		}
		data, err := post(c.organizationsURL, body, nil)
		if err != nil {
			return err
		}
		oc, err = decodeOrganizations(data)
		return err
	})
	if err != nil {
		return OrganizationContext{}, err
	}
	return oc, nil
}

// The members of a get-organizations answer the client reads, per object.
var (
	organizationsMembers = []string{"status", "organization"}
	organizationMembers  = []string{"userId", "tenants"}
	tenantMembers        = []string{"tenantId", "tenantName", "departments"}
	departmentMembers    = []string{"departmentId", "departmentName"}
)

// maxOrganizationItems bounds the tenants and departments one answer may
// make the client keep.
const maxOrganizationItems = 10_000

// decodeOrganizations reads a get-organizations answer as strictly as an
// authorize answer (see newReader in answer.go). status must be true; userId and
// every tenantId and departmentId must be present and not empty; names and
// departments may be left out; at most maxOrganizationItems tenants and
// departments in all.
func decodeOrganizations(data []byte) (OrganizationContext, error) {
	r := newReader(data)
	defer r.free()
	r.budget = maxOrganizationItems
	var oc OrganizationContext
	var status, sawStatus, sawOrganization bool
	err := r.Object()
	for i, ok := r.Next(organizationsMembers, &err); ok; i, ok = r.Next(organizationsMembers, &err) {
		if i == 0 {
			sawStatus = true
			status, err = r.Boolean()
		} else {
			sawOrganization = true
			oc, err = r.organization()
		}
	}
	if err == nil {
		err = r.End()
	}
	switch {
	case err != nil:
		return OrganizationContext{}, malformed("the body is not a valid answer: %s", jsonProblem(err))
	case !sawStatus || !sawOrganization:
		return OrganizationContext{}, malformed("the answer lacks status or organization")
	case !status:
		return OrganizationContext{}, malformed("the gateway reported status false")
	}
	return oc, nil
}

func (r *reader) organization() (OrganizationContext, error) {
	oc := OrganizationContext{Tenants: []Tenant{}}
	var sawTenants bool
	err := r.Object()
	for i, ok := r.Next(organizationMembers, &err); ok; i, ok = r.Next(organizationMembers, &err) {
		if i == 0 {
			oc.UserID, err = r.Str()
			continue
		}
		sawTenants = true
		err = r.Array()
		for r.More(&err) {
			if err = r.spend(); err == nil {
				var t Tenant
				t, err = r.tenant()
				oc.Tenants = append(oc.Tenants, t)
			}
		}
	}
	if err == nil && (oc.UserID == "" || !sawTenants) {
		err = strictjson.ErrMissingMember
	}
	return oc, err
}

func (r *reader) tenant() (Tenant, error) {
	t := Tenant{Departments: []Department{}}
	err := r.Object()
	for i, ok := r.Next(tenantMembers, &err); ok; i, ok = r.Next(tenantMembers, &err) {
		switch i {
		case 0:
			t.ID, err = r.Str()
		case 1:
			t.Name, err = r.Str()
		default:
			err = r.Array()
			for r.More(&err) {
				if err = r.spend(); err == nil {
					var d Department
					d, err = r.department()
					t.Departments = append(t.Departments, d)
				}
			}
		}
	}
	if err == nil && t.ID == "" {
		err = strictjson.ErrMissingMember
	}
	return t, err
}

func (r *reader) department() (Department, error) {
	var d Department
	err := r.Object()
	for i, ok := r.Next(departmentMembers, &err); ok; i, ok = r.Next(departmentMembers, &err) {
		if i == 0 {
			d.ID, err = r.Str()
		} else {
			d.Name, err = r.Str()
		}
	}
	if err == nil && d.ID == "" {
		err = strictjson.ErrMissingMember
	}
	return d, err
}
