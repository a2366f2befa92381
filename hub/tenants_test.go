package hub

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// TestTenantQuotaAndFilters: a job's tenant comes from "tenant" or the
// scheduler.tenant_label label; a tenant at max_queued gets 429
// tenant_quota naming the quota while another tenant is still taken;
// GET /jobs filters by tenant and priority and refuses bad values.
func TestTenantQuotaAndFilters(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("scheduler.tenant_label", "team"))
	require.NoError(t, cfg.Set("scheduler.tenant_quotas", "*=queued:100,small=queued:2"))
	h := startTestHub(t, cfg)

	a := submit(t, h.URL(), `{"mode":"noop","tenant":"small","priority":3}`)
	require.Equal(t, "small", a.Tenant)
	b := submit(t, h.URL(), `{"mode":"noop","labels":{"team":"small"}}`)
	require.Equal(t, "small", b.Tenant, "the tenant label names the tenant")
	d := submit(t, h.URL(), `{"mode":"noop"}`)
	require.Equal(t, "", d.Tenant, "no tenant: the default tenant")

	res, body := request(t, "POST", h.URL()+"/jobs", `{"mode":"noop","tenant":"small"}`)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, string(body))
	require.Equal(t, "5", res.Header.Get("Retry-After"))
	var e struct {
		Error struct {
			Code, Limit, Tenant string
			Max, Queued         int
		}
	}
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, "tenant_quota", e.Error.Code)
	require.Equal(t, "scheduler.tenant_quotas", e.Error.Limit)
	require.Equal(t, "small", e.Error.Tenant)
	require.Equal(t, 2, e.Error.Max)
	require.Equal(t, 2, e.Error.Queued)
	submit(t, h.URL(), `{"mode":"noop","tenant":"big"}`) // another tenant is still taken

	list := func(q string) (int, []string) {
		st, b := do(t, "GET", h.URL()+"/jobs?"+q, "")
		var page struct{ Jobs []persistence.Job }
		_ = json.Unmarshal(b, &page)
		var ids []string
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		return st, ids
	}
	st, ids := list("tenant=small")
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, []string{b.ID, a.ID}, ids)
	_, ids = list("tenant=")
	require.Equal(t, []string{d.ID}, ids)
	_, ids = list("tenant=small&priority=3&limit=1")
	require.Equal(t, []string{a.ID}, ids)
	for _, bad := range []string{"priority=10", "priority=x", "tenant=" + url.QueryEscape("a\x00b")} {
		st, _ := list(bad)
		require.Equal(t, http.StatusBadRequest, st, bad)
	}
	st, _ = do(t, "POST", h.URL()+"/jobs", `{"mode":"noop","tenant":"bad\u0001"}`)
	require.Equal(t, http.StatusBadRequest, st)

	// No worker: 4 jobs queued, no lane free, so /pressure says busy.
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", h.URL()+"/pressure", "")
		var p struct {
			Queued int
			OK     bool
			Reason string
		}
		return st == http.StatusOK && json.Unmarshal(b, &p) == nil && p.Queued == 4 && !p.OK && p.Reason == "no_workers"
	}, 10*time.Second, 100*time.Millisecond)
	res, body = request(t, "GET", h.URL()+"/pressure?probe=1", "")
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, "busy\n", string(body))
	require.Equal(t, "5", res.Header.Get("Retry-After"))
}
