package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/persistence"
)

// TestJobsBatch: POST /jobs:batch answers each item as POST /jobs would,
// in order, and refuses a batch that is not an array or is over its bounds.
func TestJobsBatch(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	ctx := context.Background()

	st, b := do(t, "POST", h.URL()+"/jobs:batch", `[{"mode":"noop"},{"mode":"noop","priority":3,"idempotency_key":"bk-1"}]`)
	require.Equal(t, http.StatusCreated, st, string(b))
	var all api.BatchResponse
	require.NoError(t, json.Unmarshal(b, &all))
	require.Len(t, all.Results, 2)
	var first, keyed persistence.Job
	require.NoError(t, json.Unmarshal(all.Results[0].Job, &first))
	require.NoError(t, json.Unmarshal(all.Results[1].Job, &keyed))
	require.Equal(t, 3, keyed.Priority)
	stored, err := h.stores.Jobs.Get(ctx, keyed.ID)
	require.NoError(t, err)
	require.Equal(t, "bk-1", stored.IdempotencyKey, "the item's key is the job's Idempotency-Key")

	// A mixed batch: 207, each item its own status, in order; the keyed
	// repeat is 200 with the same job.
	st, b = do(t, "POST", h.URL()+"/jobs:batch",
		`[{"mode":"noop"},{"mode":"noop","priority":42},{"mode":"noop","idempotency_key":"bk-1","priority":3},{"mode":"noop","bogus":1},7]`)
	require.Equal(t, http.StatusMultiStatus, st, string(b))
	var mixed api.BatchResponse
	require.NoError(t, json.Unmarshal(b, &mixed))
	codes := []int{}
	for _, r := range mixed.Results {
		codes = append(codes, r.Status)
	}
	require.Equal(t, []int{201, 400, 200, 400, 400}, codes)
	require.Contains(t, string(mixed.Results[1].Error), `"bad_priority"`)
	require.Contains(t, string(mixed.Results[3].Error), `"bad_json"`)
	var again persistence.Job
	require.NoError(t, json.Unmarshal(mixed.Results[2].Job, &again))
	require.Equal(t, keyed.ID, again.ID)

	// A key used twice in one batch: the second item is the first's job
	// (200), or 422 when it asks for something else.
	st, b = do(t, "POST", h.URL()+"/jobs:batch",
		`[{"mode":"noop","idempotency_key":"bk-2"},{"mode":"noop","idempotency_key":"bk-2"},{"mode":"noop","priority":7,"labels":{"x":"y"},"idempotency_key":"bk-2"}]`)
	require.Equal(t, http.StatusMultiStatus, st, string(b))
	var twice api.BatchResponse
	require.NoError(t, json.Unmarshal(b, &twice))
	require.Equal(t, 201, twice.Results[0].Status)
	require.Equal(t, 200, twice.Results[1].Status)
	require.Equal(t, 422, twice.Results[2].Status, string(twice.Results[2].Error))
	require.Contains(t, string(twice.Results[2].Error), `"idempotency_key_reused"`)
	var one, two persistence.Job
	require.NoError(t, json.Unmarshal(twice.Results[0].Job, &one))
	require.NoError(t, json.Unmarshal(twice.Results[1].Job, &two))
	require.Equal(t, one.ID, two.ID)

	// The batch as a whole.
	for _, c := range []struct {
		body string
		code int
		want string
	}{
		{`{"mode":"noop"}`, 400, "bad_json"},
		{`[]`, 400, "empty_batch"},
		{"[" + strings.Repeat(`{"mode":"noop"},`, api.MaxBatchJobs) + `{"mode":"noop"}]`, 413, "batch_too_large"},
		{`[{"mode":"noop","params":"` + strings.Repeat("x", api.MaxBatchBytes) + `"}]`, 413, "body_too_large"},
	} {
		st, b := do(t, "POST", h.URL()+"/jobs:batch", c.body)
		require.Equal(t, c.code, st, string(b))
		require.Contains(t, string(b), c.want)
	}

	// The SDK: one result per request, in order, a refused one as *APIError.
	cl, err := client.New([]string{h.URL()})
	require.NoError(t, err)
	bad := 99
	res, err := cl.SubmitMany(ctx, []client.SubmitRequest{{Mode: "noop"}, {Mode: "noop", Priority: &bad}, {Mode: "noop", Labels: map[string]string{"k": "v"}}})
	require.NoError(t, err)
	require.Len(t, res, 3)
	require.NoError(t, res[0].Err)
	require.NotEmpty(t, res[0].Job.ID)
	require.True(t, client.IsStatus(res[1].Err, http.StatusBadRequest), "%v", res[1].Err)
	require.NoError(t, res[2].Err)
	require.Equal(t, "v", res[2].Job.Labels["k"])
	got, err := cl.Get(ctx, res[2].Job.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusQueued, got.Status)
}

// TestJobsBatchQueueLimits: limits.max_queued and a tenant's max_queued
// apply to each item of a batch, counting the items created before it in
// the same batch.
func TestJobsBatchQueueLimits(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("limits.max_queued", "4"))
	require.NoError(t, cfg.Set("scheduler.tenant_quotas", "*=queued:100,small=queued:2"))
	h := startTestHub(t, cfg)
	st, b := do(t, "POST", h.URL()+"/jobs:batch", `[{"mode":"noop","tenant":"small"},{"mode":"noop","tenant":"small"},{"mode":"noop","tenant":"small"},`+
		`{"mode":"noop","tenant":"big"},{"mode":"noop","tenant":"big"},{"mode":"noop","tenant":"big"}]`)
	require.Equal(t, http.StatusMultiStatus, st, string(b))
	var res api.BatchResponse
	require.NoError(t, json.Unmarshal(b, &res))
	var codes []int
	for _, r := range res.Results {
		codes = append(codes, r.Status)
	}
	require.Equal(t, []int{201, 201, 429, 201, 201, 429}, codes, string(b))
	require.Contains(t, string(res.Results[2].Error), `"tenant_quota"`)
	require.Contains(t, string(res.Results[5].Error), `"queue_full"`)
	listed, _, err := h.stores.Jobs.List(context.Background(), persistence.ListQuery{Limit: 100})
	require.NoError(t, err)
	require.Len(t, listed, 4)
}

// TestJobsBatchOnMariaDB: on MariaDB a batch's items are created together
// (multi-row INSERTs), answered in order, a key used twice answered with
// the first item's job, and listed in the batch's order.
func TestJobsBatchOnMariaDB(t *testing.T) {
	h := startTestHub(t, realConfig(t))
	items := make([]string, 200)
	for i := range items {
		items[i] = fmt.Sprintf(`{"mode":"noop","labels":{"i":"%d"}}`, i)
	}
	items[3] = `{"mode":"noop","labels":{"i":"3"},"idempotency_key":"mk-1"}`
	items[4] = `{"mode":"noop","labels":{"i":"3"},"idempotency_key":"mk-1"}`
	st, b := do(t, "POST", h.URL()+"/jobs:batch", "["+strings.Join(items, ",")+"]")
	require.Equal(t, http.StatusMultiStatus, st, string(b))
	var res api.BatchResponse
	require.NoError(t, json.Unmarshal(b, &res))
	require.Len(t, res.Results, len(items))
	var ids []string
	for i, r := range res.Results {
		var j persistence.Job
		require.NoError(t, json.Unmarshal(r.Job, &j), "item %d: %s", i, r.Error)
		if i == 4 {
			require.Equal(t, http.StatusOK, r.Status)
			require.Equal(t, ids[3], j.ID, "the key's job, created by item 3")
			continue
		}
		require.Equal(t, http.StatusCreated, r.Status, "item %d", i)
		ids = append(ids, j.ID)
	}
	listed, _, err := h.stores.Jobs.List(context.Background(), persistence.ListQuery{OldestFirst: true, Limit: 1000})
	require.NoError(t, err)
	var order []string
	for _, j := range listed {
		order = append(order, j.ID)
	}
	require.Equal(t, ids, order, "listed in the batch's order")
}
