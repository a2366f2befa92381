package main

import (
	"encoding/json"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/client"
)

// matchTenantPriority is the fake hub's tenant and priority filter.
func matchTenantPriority(q url.Values, j client.Job) bool {
	if q.Has("tenant") && q.Get("tenant") != j.Tenant {
		return false
	}
	if q.Has("priority") && q.Get("priority") != strconv.Itoa(j.Priority) {
		return false
	}
	return true
}

// TestTenantFlags: submit --tenant sends the tenant; jobs ls --tenant (an
// empty one too: the default tenant) and --priority filter; a priority out
// of 0..9 is a usage error.
func TestTenantFlags(t *testing.T) {
	t.Parallel()
	h, srv := setup(t)
	env := map[string]string{envHub: srv.URL}
	r := runCLI(t, env, "submit", "--mode", "noop", "--tenant", "acme")
	require.Equal(t, exitOK, r.code, r.stderr)
	h.mu.Lock()
	require.JSONEq(t, `"acme"`, string(h.seen[0].body["tenant"]))
	h.mu.Unlock()

	h.addJob(client.Job{ID: "ja", Mode: "noop", Status: client.StatusQueued, Tenant: "acme", Priority: 3})
	h.addJob(client.Job{ID: "jd", Mode: "noop", Status: client.StatusQueued, Priority: 5})
	ls := func(args ...string) []string {
		r := runCLI(t, env, append([]string{"jobs", "ls", "--json"}, args...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		var page client.Page
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &page))
		var ids []string
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		return ids
	}
	require.Equal(t, []string{"ja"}, ls("--tenant", "acme"))
	def := ls("--tenant=") // the fake keeps no tenant of the job submitted above
	require.Contains(t, def, "jd")
	require.NotContains(t, def, "ja")
	require.Equal(t, []string{"ja"}, ls("--priority", "3"))
	r = runCLI(t, env, "jobs", "ls", "--priority", "10")
	require.Equal(t, exitUsage, r.code)
}
