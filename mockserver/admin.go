package mockserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/mail"
	"regexp"
	"slices"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// adminRoutes registers platform administration. GET
// /admin/tenants/{tenantId}, GET /admin/config and PATCH /admin/config are
// extensions of the service specification.
// Every route needs the platform-admin role in a master realm token.
func (s *Server) adminRoutes(m mux) {
	m.Handle("POST /admin/tenants", s.platformAdmin("tenant.create", s.provisionTenant))
	m.Handle("GET /admin/tenants/{tenantId}", s.platformAdmin("", s.answered(s.getTenant)))
	m.Handle("DELETE /admin/tenants/{tenantId}", s.platformAdmin("tenant.decommission", s.decommissionTenant))
	m.Handle("GET /admin/health", s.platformAdmin("", s.health))
	m.Handle("GET /admin/config", s.platformAdmin("", s.getConfig))
	m.Handle("PUT /admin/config", s.platformAdmin("config.update", s.answered(s.putConfig)))
	m.Handle("PATCH /admin/config", s.platformAdmin("config.update", s.answered(s.patchConfig)))
	m.Handle("GET /admin/audit", s.platformAdmin("", s.answered(s.audit)))
}

var (
	tenantNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,62}$`)
	tenantPlans  = map[string]bool{"free": true, "standard": true, "enterprise": true}
)

type tenantRequest struct {
	Name       string `json:"name"`
	Plan       string `json:"plan"`
	AdminEmail string `json:"adminEmail"`
}

type tenantRecord struct {
	TenantID         string     `json:"tenantId"`
	Name             string     `json:"name,omitempty"`
	Plan             string     `json:"plan,omitempty"`
	AdminEmail       string     `json:"adminEmail,omitempty"`
	Status           string     `json:"status"`
	CreatedAt        *time.Time `json:"createdAt,omitempty"`
	DecommissionedAt *time.Time `json:"decommissionedAt,omitempty"`
	InitialPassword  string     `json:"initialPassword,omitempty"`
}

// check validates a provisioning request, naming every bad field.
func (req tenantRequest) check() error {
	var details []fieldError
	if !tenantNameRE.MatchString(req.Name) {
		details = append(details, fieldError{Field: "name", Message: "must match " + tenantNameRE.String()})
	}
	if !tenantPlans[req.Plan] {
		details = append(details, fieldError{Field: "plan", Message: "must be one of free, standard, enterprise"})
	}
	if a, err := mail.ParseAddress(req.AdminEmail); err != nil || a.Address != req.AdminEmail || a.Name != "" {
		details = append(details, fieldError{Field: "adminEmail", Message: "must be an email address"})
	}
	if len(details) == 0 {
		return nil
	}
	e := &apiError{status: http.StatusBadRequest, details: details}
	e.message = details[0].Field + ": " + details[0].Message
	return e
}

// provisionTenant creates a realm with its signing key, default roles and
// client, and an admin user whose one-time password it returns.
func (s *Server) provisionTenant(w http.ResponseWriter, r *http.Request, c *caller) {
	var req tenantRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeErrFor(w, c, err)
		return
	}
	if err := req.check(); err != nil {
		s.writeErrFor(w, c, err)
		return
	}
	key, kid, err := s.keys.signing(req.Name)
	if err != nil {
		s.writeErrFor(w, c, err)
		return
	}
	password := randomSecret(18)
	rm, err := s.store.ProvisionTenant(req.Name, req.Plan, req.AdminEmail, password, key, kid)
	if err != nil {
		s.writeErrFor(w, c, err)
		return
	}
	t := rm.Tenant // immutable but for DecommissionedAt, which is not read
	out := tenantRecord{TenantID: t.ID, Name: rm.Name, Plan: t.Plan, AdminEmail: t.AdminEmail,
		Status: store.TenantActive, CreatedAt: &t.CreatedAt, InitialPassword: password}
	c.resourceID, c.tenantID = out.TenantID, out.TenantID
	s.logger.Info("tenant provisioned", "tenant", out.Name, "tenantId", out.TenantID)
	w.Header().Set("Location", s.publicURL(r, "/admin/tenants/"+out.TenantID))
	writeResult(w, http.StatusCreated, out)
}

// getTenant answers a live tenant's record (the Location of a provisioned
// tenant); a decommissioned tenant is a 404, as a second DELETE is. It is
// an extension of the specification.
func (s *Server) getTenant(r *http.Request, c *caller) (any, error) {
	info, err := s.store.LiveTenant(r.PathValue("tenantId"))
	if err != nil {
		return nil, err
	}
	return resultBody{Result: tenantRecord{TenantID: info.ID, Name: info.Name, Plan: info.Plan,
		AdminEmail: info.AdminEmail, Status: info.Status, CreatedAt: &info.CreatedAt}}, nil
}

// decommissionTenant marks a tenant's realm decommissioned; its tokens are
// refused from then on.
func (s *Server) decommissionTenant(w http.ResponseWriter, r *http.Request, c *caller) {
	id := r.PathValue("tenantId")
	c.resourceID = id
	realm, at, err := s.store.DecommissionTenant(id)
	if err != nil {
		s.writeErrFor(w, c, err)
		return
	}
	// Its tokens are refused from now on: what remembers them goes.
	s.auth.verified.forget(realm)
	s.auth.proofs.drop(realm)
	s.auth.revoked.forget(realm)
	// Only a tenant that exists gets the entry in its own audit log: an
	// unknown id is the caller's, and each would make a log of its own.
	c.tenantID = id
	out := tenantRecord{TenantID: id, Status: store.TenantDecommissioned, DecommissionedAt: &at}
	s.logger.Info("tenant decommissioned", "tenantId", id)
	writeResult(w, http.StatusOK, out)
}

// Health statuses.
const (
	healthUp       = "UP"
	healthDegraded = "DEGRADED"
	healthDown     = "DOWN"
)

type healthComponent struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

type healthBody struct {
	Status     string            `json:"status"`
	Components []healthComponent `json:"components"`
	CheckedAt  time.Time         `json:"checkedAt"`
}

// health reports the store, the token issuer and the decision endpoint.
// Fault injection shows: a failure rate of 1 is DOWN, any other injected
// fault DEGRADED. The overall status is the worst component's; DOWN is a 503.
// The store refuses a realm without a signing key, so the issuer is up
// whenever the server runs; no realm is visited.
func (s *Server) health(w http.ResponseWriter, r *http.Request, c *caller) {
	body := healthBody{Status: healthUp, CheckedAt: s.now().UTC()}
	body.Components = append(body.Components, healthComponent{"store", healthUp}, healthComponent{"issuer", healthUp})
	dec := healthUp
	switch cfg := s.store.Config(); {
	case cfg.DecisionFailureRate >= 1:
		dec = healthDown
	case cfg.DecisionFailureRate > 0 || cfg.DecisionLatencyMs > 0:
		dec = healthDegraded
	}
	body.Components = append(body.Components, healthComponent{"decisions", dec})
	for _, comp := range body.Components {
		if comp.Status == healthDown {
			body.Status = healthDown
		} else if comp.Status == healthDegraded && body.Status == healthUp {
			body.Status = healthDegraded
		}
	}
	status := http.StatusOK
	if body.Status == healthDown {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, body)
}

// configBody is the wire form of the platform configuration.
type configBody struct {
	TokenLifetimeSeconds int     `json:"tokenLifetimeSeconds"`
	MaxPageSize          int     `json:"maxPageSize"`
	DPoPNonceRequired    bool    `json:"dpopNonceRequired"`
	DecisionLatencyMs    int     `json:"decisionLatencyMs"`
	DecisionFailureRate  float64 `json:"decisionFailureRate"`
}

// getConfig answers the configuration (an extension of the specification,
// which has only PUT).
func (s *Server) getConfig(w http.ResponseWriter, r *http.Request, c *caller) {
	writeResult(w, http.StatusOK, configBody(s.store.Config()))
}

// configLimits bound each integer key, inclusive.
var configLimits = map[string][2]int{
	"tokenLifetimeSeconds": {1, store.MaxTokenLifetimeSeconds},
	"maxPageSize":          {1, 100},
	"decisionLatencyMs":    {0, 60000},
}

// putConfig replaces the configuration: keys the body omits take their
// default values; an unknown key or a value out of range is a 400.
func (s *Server) putConfig(r *http.Request, c *caller) (any, error) {
	return s.changeConfig(r, c, func(store.Config) store.Config { return store.DefaultConfig() })
}

// patchConfig changes only the keys the body names; the others keep their
// current values. PATCH is an extension of the specification, which has
// only PUT.
func (s *Server) patchConfig(r *http.Request, c *caller) (any, error) {
	return s.changeConfig(r, c, func(cur store.Config) store.Config { return cur })
}

// changeConfig sets the keys the body names on base(current configuration)
// and installs the result, atomically with respect to other changes. An
// unknown key or a value out of range is a 400 and changes nothing.
func (s *Server) changeConfig(r *http.Request, c *caller, base func(store.Config) store.Config) (any, error) {
	c.resourceID = "config"
	var raw map[string]json.RawMessage
	if err := decodeBody(r, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errf(http.StatusBadRequest, "the configuration must be a JSON object")
	}
	cfg, err := s.store.UpdateConfig(func(cur store.Config) (store.Config, error) {
		cfg := base(cur)
		return cfg, applyConfig(&cfg, raw)
	})
	if err != nil {
		return nil, err
	}
	s.logger.Info("configuration changed", "method", r.Method, "config", configBody(cfg))
	return resultBody{Result: configBody(cfg)}, nil
}

// applyConfig sets the keys of raw on cfg, refusing an unknown key or a
// value out of range.
func applyConfig(cfg *store.Config, raw map[string]json.RawMessage) error {
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		v := raw[key]
		var err error
		switch key {
		case "tokenLifetimeSeconds":
			err = configInt(key, v, &cfg.TokenLifetimeSeconds)
		case "maxPageSize":
			err = configInt(key, v, &cfg.MaxPageSize)
		case "decisionLatencyMs":
			err = configInt(key, v, &cfg.DecisionLatencyMs)
		case "dpopNonceRequired":
			if e := strictUnmarshal(v, &cfg.DPoPNonceRequired); e != nil {
				err = badField(key, "must be a boolean")
			}
		case "decisionFailureRate":
			if e := strictUnmarshal(v, &cfg.DecisionFailureRate); e != nil || cfg.DecisionFailureRate < 0 || cfg.DecisionFailureRate > 1 {
				err = badField(key, "must be a number from 0 to 1")
			}
		default:
			err = badField(key, "unknown configuration key; known keys: tokenLifetimeSeconds, maxPageSize, dpopNonceRequired, decisionLatencyMs, decisionFailureRate")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func configInt(key string, v json.RawMessage, dst *int) error {
	lim := configLimits[key]
	var n int
	if err := strictUnmarshal(v, &n); err != nil || n < lim[0] || n > lim[1] {
		return badField(key, "must be an integer from %d to %d", lim[0], lim[1])
	}
	*dst = n
	return nil
}

// strictUnmarshal decodes v, refusing null.
func strictUnmarshal(v json.RawMessage, dst any) error {
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return errors.New("null")
	}
	return json.Unmarshal(v, dst)
}

type auditBody struct {
	ID           string    `json:"id"`
	Timestamp    time.Time `json:"timestamp"`
	ActorID      string    `json:"actorId"`
	Action       string    `json:"action"`
	TenantID     string    `json:"tenantId"`
	ResourceType string    `json:"resourceType"`
	ResourceID   string    `json:"resourceId"`
	Outcome      string    `json:"outcome"`
}

// audit lists audit entries newest first, filtered by from and to (RFC 3339,
// inclusive), actorId, action and tenantId.
func (s *Server) audit(r *http.Request, c *caller) (any, error) {
	q := r.URL.Query()
	f := store.AuditFilter{ActorID: q.Get("actorId"), Action: q.Get("action"), TenantID: q.Get("tenantId")}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v, ok := queryParam(q, p.name); ok {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, badField(p.name, "must be an RFC 3339 timestamp")
			}
			*p.dst = t
		}
	}
	pg, err := parsePage(r, defaultPageSize, s.store.Config().MaxPageSize)
	if err != nil {
		return nil, err
	}
	entries, total := s.store.AuditPage(f, pg.Offset, pg.Count)
	var body listBody[auditBody]
	body.MetaData.CurrentPagination = pg
	body.MetaData.TotalRows = total
	body.Results = make([]auditBody, len(entries))
	for i, e := range entries {
		body.Results[i] = auditBody(e)
	}
	return body, nil
}
