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

// TestTenantMaxRunningSurvivesSchedulerRestart: with max_running 1 for
// tenant a, a second job of a waits while a's first runs, even across a
// scheduler restart (the fresh activation recounts from the store), while
// tenant b's job runs at once on a free lane.
func TestTenantMaxRunningSurvivesSchedulerRestart(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("scheduler.tenant_quotas", "a=running:1"))
	h := startTestHub(t, cfg)
	startAgent(t, h.URL(), "wa", 4)
	waitAliveWorkers(t, h, 1)

	a1 := submit(t, h.URL(), `{"mode":"noop","tenant":"a","params":{"sleep_ms":1500}}`)
	require.Eventually(t, func() bool { return getJob(t, h.URL(), a1.ID).Status == persistence.StatusRunning },
		10*time.Second, 10*time.Millisecond)
	require.NoError(t, h.InjectPanic(t.Context(), "scheduler", ""))
	a2 := submit(t, h.URL(), `{"mode":"noop","tenant":"a","params":{"sleep_ms":10}}`)
	b1 := submit(t, h.URL(), `{"mode":"noop","tenant":"b","params":{"sleep_ms":10}}`)

	fa1 := waitFinal(t, h.URL(), a1.ID, 20*time.Second)
	fa2 := waitFinal(t, h.URL(), a2.ID, 20*time.Second)
	fb1 := waitFinal(t, h.URL(), b1.ID, 20*time.Second)
	for _, j := range []persistence.Job{fa1, fa2, fb1} {
		require.Equal(t, persistence.StatusSucceeded, j.Status, j.ID)
	}
	require.False(t, fa2.StartedAt.Before(fa1.FinishedAt), "a's second job started at %v, before its first ended at %v", fa2.StartedAt, fa1.FinishedAt)
	require.True(t, fb1.FinishedAt.Before(fa1.FinishedAt), "b is not held by a's quota")
}
