package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
)

// testListFilters: each of ListQuery's mode, worker, reason and label
// filters, alone and together and with a status, keeps exactly the
// matching jobs, in order, across pages of every size, both ways.
func testListFilters(t *testing.T, s persistence.JobStore) {
	ctx := t.Context()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	// 12 jobs: i%3 picks the mode, i%2 the team label; 1..8 are claimed
	// by w1 (odd) or w2 (even); 1, 2, 5 fail with job_error, 3 with
	// worker_lost, 4 succeeds.
	modes := []string{"noop", "pdf-diff", "http.check"}
	created := make([]persistence.Job, 12)
	for i := range created {
		j := newJob(i)
		j.Mode = modes[i%3]
		j.Labels = map[string]string{"team": []string{"qa", "ops"}[i%2], "n": fmt.Sprint(i), `k"ey\`: `v"al`}
		if i == 11 {
			j.Labels = nil
		}
		j.CreatedAt = base.Add(time.Duration(i) * time.Millisecond)
		created[i] = mustCreate(t, s, j)
	}
	for i := 1; i <= 8; i++ {
		_, err := s.Claim(ctx, created[i].ID, []string{"w2", "w1"}[i%2], time.Now())
		require.NoError(t, err)
	}
	fail := func(i int, reason string) {
		_, err := s.Finish(ctx, created[i].ID, 1, persistence.Finish{Status: persistence.StatusFailed, Reason: reason, Error: "x"})
		require.NoError(t, err)
	}
	fail(1, persistence.ReasonJobError)
	fail(2, persistence.ReasonJobError)
	fail(5, persistence.ReasonJobError)
	fail(3, persistence.ReasonWorkerLost)
	_, err := s.Finish(ctx, created[4].ID, 1, persistence.Finish{Status: persistence.StatusSucceeded})
	require.NoError(t, err)

	cases := []struct {
		name string
		q    persistence.ListQuery
		want []int // newest first
	}{
		{"mode", persistence.ListQuery{Mode: "pdf-diff"}, []int{10, 7, 4, 1}},
		{"mode with a dot", persistence.ListQuery{Mode: "http.check"}, []int{11, 8, 5, 2}},
		{"mode nobody runs", persistence.ListQuery{Mode: "nope"}, nil},
		{"worker", persistence.ListQuery{WorkerID: "w1"}, []int{7, 5, 3, 1}},
		{"worker and status", persistence.ListQuery{WorkerID: "w2", Status: persistence.StatusRunning}, []int{8, 6}},
		{"dead view", persistence.ListQuery{Status: persistence.StatusFailed, Reason: persistence.ReasonJobError}, []int{5, 2, 1}},
		{"reason alone", persistence.ListQuery{Reason: persistence.ReasonWorkerLost}, []int{3}},
		{"one label", persistence.ListQuery{Labels: map[string]string{"team": "ops"}}, []int{9, 7, 5, 3, 1}},
		{"two labels", persistence.ListQuery{Labels: map[string]string{"team": "qa", "n": "4"}}, []int{4}},
		{"a label with quotes and a backslash", persistence.ListQuery{Labels: map[string]string{`k"ey\`: `v"al`}},
			[]int{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"a label value that differs", persistence.ListQuery{Labels: map[string]string{"team": "dev"}}, nil},
		{"a value that is a prefix", persistence.ListQuery{Labels: map[string]string{"team": "q"}}, nil},
		{"everything at once", persistence.ListQuery{Status: persistence.StatusFailed, Mode: "pdf-diff", WorkerID: "w1",
			Reason: persistence.ReasonJobError, Labels: map[string]string{"team": "ops"}}, []int{1}},
	}
	for _, tc := range cases {
		wantIDs := make([]string, len(tc.want))
		for k, i := range tc.want {
			wantIDs[k] = created[i].ID
		}
		for _, limit := range []int{1, 2, 0} {
			q := tc.q
			q.Limit = limit
			got := listAll(t, s, q, nil)
			require.Equal(t, wantIDs, ids(got), "%s, limit %d", tc.name, limit)
			q.OldestFirst = true
			got = listAll(t, s, q, nil)
			require.Equal(t, reversed(wantIDs), ids(got), "%s, limit %d, oldest first", tc.name, limit)
		}
	}
}
