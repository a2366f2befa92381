package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// jobTenantTests are the tenant field and the tenant and priority filters
// of List, run by RunJobStore.
var jobTenantTests = []jobTest{
	{"Tenant", testJobTenant},
	{"ListTenantPriorityFilter", testListTenantPriorityFilter},
}

// testJobTenant: a job's tenant is stored as given ("" too, the default
// tenant), survives a claim, and one over MaxTenantBytes is refused.
func testJobTenant(t *testing.T, s persistence.JobStore) {
	for _, tenant := range []string{"", "acme", "ünïcode tenant/1"} {
		in := newJob(1)
		in.Tenant = tenant
		stored := mustCreate(t, s, in)
		require.Equal(t, tenant, stored.Tenant)
		got, err := s.Get(t.Context(), stored.ID)
		require.NoError(t, err)
		require.Equal(t, tenant, got.Tenant)
		claimed, err := s.Claim(t.Context(), stored.ID, "w1", time.Now())
		require.NoError(t, err)
		require.Equal(t, tenant, claimed.Tenant)
	}
	in := newJob(2)
	in.Tenant = string(make([]byte, persistence.MaxTenantBytes+1))
	_, _, err := s.Create(t.Context(), in)
	require.Error(t, err)
}

// testListTenantPriorityFilter: List with a tenant, a priority, both, and
// with a status on top, pages through exactly the matching jobs, in order,
// both directions, whatever the page size.
func testListTenantPriorityFilter(t *testing.T, s persistence.JobStore) {
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	tenants := []string{"", "a", "b"}
	var all []persistence.Job
	for i := range 30 {
		j := newJob(i)
		j.CreatedAt = base.Add(time.Duration(i) * time.Millisecond)
		j.Tenant = tenants[i%3]
		j.Priority = i % 4
		all = append(all, mustCreate(t, s, j))
	}
	// Some of tenant a's jobs run, so a status filter narrows further.
	for _, j := range all[:12] {
		if j.Tenant == "a" {
			_, err := s.Claim(t.Context(), j.ID, "w1", time.Now())
			require.NoError(t, err)
		}
	}
	prio := func(p int) *int { return &p }
	cases := []struct {
		name string
		q    persistence.ListQuery
		keep func(j persistence.Job, running bool) bool
	}{
		{"default tenant", persistence.ListQuery{HasTenant: true, Tenant: ""},
			func(j persistence.Job, _ bool) bool { return j.Tenant == "" }},
		{"tenant a", persistence.ListQuery{HasTenant: true, Tenant: "a"},
			func(j persistence.Job, _ bool) bool { return j.Tenant == "a" }},
		{"unknown tenant", persistence.ListQuery{HasTenant: true, Tenant: "zz"},
			func(persistence.Job, bool) bool { return false }},
		{"priority 0", persistence.ListQuery{Priority: prio(0)},
			func(j persistence.Job, _ bool) bool { return j.Priority == 0 }},
		{"tenant b priority 2", persistence.ListQuery{HasTenant: true, Tenant: "b", Priority: prio(2)},
			func(j persistence.Job, _ bool) bool { return j.Tenant == "b" && j.Priority == 2 }},
		{"tenant a queued", persistence.ListQuery{HasTenant: true, Tenant: "a", Status: persistence.StatusQueued},
			func(j persistence.Job, running bool) bool { return j.Tenant == "a" && !running }},
		{"tenant a running", persistence.ListQuery{HasTenant: true, Tenant: "a", Status: persistence.StatusRunning},
			func(j persistence.Job, running bool) bool { return j.Tenant == "a" && running }},
	}
	for _, c := range cases {
		for _, oldestFirst := range []bool{false, true} {
			var want []string
			for i, j := range all {
				if c.keep(j, i < 12 && j.Tenant == "a") {
					want = append(want, j.ID)
				}
			}
			if !oldestFirst {
				want = reversed(want)
			}
			for _, limit := range []int{1, 2, 7, 100} {
				q := c.q
				q.OldestFirst, q.Limit = oldestFirst, limit
				got := listAll(t, s, q, nil)
				require.Equal(t, nonNil(want), nonNil(ids(got)), "%s, oldest first %v, limit %d", c.name, oldestFirst, limit)
				for _, j := range got {
					require.True(t, q.MatchTenantPriority(j))
				}
			}
		}
	}
}

// nonNil makes an empty list comparable with a nil want.
func nonNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
