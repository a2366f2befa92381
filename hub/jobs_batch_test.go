package hub

import (
	"context"
	"encoding/json"
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
