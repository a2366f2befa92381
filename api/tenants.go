package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/paprika-hub/paprika/persistence"
)

// TenantOptions are the tenant settings POST /jobs applies.
type TenantOptions struct {
	// Label is scheduler.tenant_label: the label whose value is the
	// tenant of a submission without "tenant" ("" = off).
	Label string
	// MaxQueued is a tenant's max_queued quota (scheduler.tenant_quotas;
	// 0 = no cap); nil = no quotas.
	MaxQueued func(tenant string) int
}

// tenantQuotaKey is the config key a tenant_quota refusal names.
const tenantQuotaKey = "scheduler.tenant_quotas"

// tenantOf is the submission's tenant: its "tenant", else the value of the
// scheduler.tenant_label label, else the default tenant "". Bounded like a
// label value; UTF-8 without control characters (it names metrics series
// and CLI output).
func (s *Server) tenantOf(req SubmitRequest) (string, error) {
	t := req.Tenant
	if t == "" && s.opts.Tenants.Label != "" {
		t = req.Labels[s.opts.Tenants.Label]
	}
	if max := min(s.limits.MaxLabelValueBytes, persistence.MaxTenantBytes); len(t) > max {
		key := "limits.max_label_value_bytes"
		if max == persistence.MaxTenantBytes && s.limits.MaxLabelValueBytes > max {
			key = "tenant"
		}
		e := limitError(http.StatusRequestEntityTooLarge, "tenant_too_large", key, max, "the tenant is %d bytes, over the limit", len(t))
		return "", e
	}
	if !validTenant(t) {
		return "", &Error{Status: http.StatusBadRequest, Code: "bad_tenant",
			Message: "the tenant must be UTF-8 text without control characters", Extra: map[string]any{"field": "tenant"}}
	}
	return t, nil
}

func validTenant(t string) bool {
	if !utf8.ValidString(t) {
		return false
	}
	for _, r := range t {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// checkTenantQueue refuses a submission with 429 tenant_quota while its
// tenant already has max_queued jobs queued in the fleet (the cached load
// plus this hub's submits since and the request's jobs ahead, as
// checkQueue counts).
func (s *Server) checkTenantQueue(ctx context.Context, tenant string, ahead int) error {
	if s.opts.Tenants.MaxQueued == nil {
		return nil
	}
	limit := s.opts.Tenants.MaxQueued(tenant)
	if limit <= 0 {
		return nil
	}
	_, _, _, _ = s.queue.load(ctx, s) // refresh when due
	depth := s.queue.tenantQueued(tenant) + ahead
	if depth < limit {
		return nil
	}
	e := limitError(http.StatusTooManyRequests, "tenant_quota", tenantQuotaKey, limit,
		"tenant %q has %d jobs queued, its max_queued; retry after %ds", tenant, depth, queueRetryAfter)
	e.Extra["tenant"] = tenant
	e.Extra["quota"] = "max_queued"
	e.Extra["queued"] = depth
	e.RetryAfter = strconv.Itoa(queueRetryAfter)
	return e
}

// listTenantPriority reads GET /jobs' tenant and priority filters into lq.
func listTenantPriority(q map[string][]string, lq *persistence.ListQuery) error {
	if v, ok := q["tenant"]; ok {
		lq.HasTenant, lq.Tenant = true, v[0]
		if len(lq.Tenant) > persistence.MaxTenantBytes || !validTenant(lq.Tenant) {
			return Errorf(http.StatusBadRequest, "bad_tenant", "tenant %.40q is not a tenant name (UTF-8, at most %d bytes)", lq.Tenant, persistence.MaxTenantBytes)
		}
	}
	if v, ok := q["priority"]; ok {
		p, err := strconv.Atoi(v[0])
		if err != nil || p < persistence.MinPriority || p > persistence.MaxPriority {
			return &Error{Status: http.StatusBadRequest, Code: "bad_priority",
				Message: fmt.Sprintf("priority %q is not an integer in %d..%d", v[0], persistence.MinPriority, persistence.MaxPriority),
				Extra:   map[string]any{"field": "priority"}}
		}
		lq.Priority = &p
	}
	return nil
}
