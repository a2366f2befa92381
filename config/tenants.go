package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultTenant names the quota of every tenant scheduler.tenant_quotas
// does not name.
const DefaultTenant = "*"

// maxTenantWeight bounds a weight: strides (1/weight) stay far from the
// float's resolution over any queue's lifetime.
const maxTenantWeight = 1e6

// TenantQuota is one tenant's quotas; 0 = no cap.
type TenantQuota struct {
	MaxRunning int // jobs running (or being placed) at once
	MaxQueued  int // jobs queued at once
}

// TenantQuotas are the parsed scheduler.tenant_quotas.
type TenantQuotas struct {
	Default TenantQuota            // the "*" entry
	Tenants map[string]TenantQuota // named tenants (they do not inherit Default)
}

// For is tenant's quota.
func (q TenantQuotas) For(tenant string) TenantQuota {
	if t, ok := q.Tenants[tenant]; ok {
		return t
	}
	return q.Default
}

// Any reports whether some quota is set.
func (q TenantQuotas) Any() bool {
	if q.Default != (TenantQuota{}) {
		return true
	}
	for _, t := range q.Tenants {
		if t != (TenantQuota{}) {
			return true
		}
	}
	return false
}

// ParseTenantWeights reads scheduler.tenant_weights ("a=3,b=1.5").
func (s SchedulerConfig) ParseTenantWeights() (map[string]float64, error) {
	out := map[string]float64{}
	err := eachTenantEntry(s.TenantWeights, func(tenant, v string) error {
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || !(w > 0) || w > maxTenantWeight || math.IsInf(w, 0) {
			return fmt.Errorf("weight %q of tenant %q is not a number in (0, %g]", v, tenant, maxTenantWeight)
		}
		out[tenant] = w
		return nil
	})
	return out, err
}

// ParseTenantQuotas reads scheduler.tenant_quotas
// ("*=running:10/queued:1000,acme=running:50").
func (s SchedulerConfig) ParseTenantQuotas() (TenantQuotas, error) {
	out := TenantQuotas{Tenants: map[string]TenantQuota{}}
	err := eachTenantEntry(s.TenantQuotas, func(tenant, v string) error {
		var q TenantQuota
		for part := range strings.SplitSeq(v, "/") {
			name, num, ok := strings.Cut(strings.TrimSpace(part), ":")
			n, err := strconv.Atoi(strings.TrimSpace(num))
			if !ok || err != nil || n < 0 {
				return fmt.Errorf("quota %q of tenant %q: want running:N or queued:N with N >= 0", part, tenant)
			}
			switch strings.TrimSpace(name) {
			case "running":
				q.MaxRunning = n
			case "queued":
				q.MaxQueued = n
			default:
				return fmt.Errorf("quota %q of tenant %q: %q is not running or queued", part, tenant, name)
			}
		}
		if tenant == DefaultTenant {
			out.Default = q
		} else {
			out.Tenants[tenant] = q
		}
		return nil
	})
	return out, err
}

// eachTenantEntry splits "tenant=value,..." and checks each tenant name.
func eachTenantEntry(s string, f func(tenant, value string) error) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(s, ",") {
		tenant, v, ok := strings.Cut(strings.TrimSpace(entry), "=")
		tenant = strings.TrimSpace(tenant)
		if !ok || tenant == "" {
			return fmt.Errorf("entry %q: want tenant=value", entry)
		}
		if len(tenant) > 1024 || !utf8.ValidString(tenant) {
			return fmt.Errorf("tenant %.40q: want at most 1024 bytes of UTF-8", tenant)
		}
		if seen[tenant] {
			return fmt.Errorf("tenant %q is named twice", tenant)
		}
		seen[tenant] = true
		if err := f(tenant, strings.TrimSpace(v)); err != nil {
			return err
		}
	}
	return nil
}

// checkTenantLabel: a label key, as limits bound them.
func checkTenantLabel(label string) string {
	if len(label) > DefaultLimitsMaxLabelKeyBytes {
		return fmt.Sprintf("%d bytes: a label key is at most %d", len(label), DefaultLimitsMaxLabelKeyBytes)
	}
	return ""
}

// errString is err's message, "" for nil (for fieldChecks).
func errString[T any](_ T, err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
