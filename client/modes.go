package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// Mode is one job mode the fleet's alive workers run (GET /modes): its
// lane need, the JSON Schema its params are checked against, and how many
// workers and lanes serve it.
type Mode = ModeInfo

// Modes lists the modes the fleet's alive workers run now, by name (GET
// /modes; any hub answers for the whole fleet).
func (c *Client) Modes(ctx context.Context) ([]Mode, error) {
	var out struct {
		Modes []Mode `json:"modes"`
	}
	err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/modes", idempotent: true}, &out)
	return out.Modes, err
}

// SubmitOption sets a field of a SubmitJSON submission besides its mode
// and params.
type SubmitOption func(*SubmitRequest, *string)

// JobLabels sets the job's labels.
func JobLabels(labels map[string]string) SubmitOption {
	return func(r *SubmitRequest, _ *string) { r.Labels = labels }
}

// JobTimeoutS sets the job's hard deadline, in seconds from creation.
func JobTimeoutS(s int) SubmitOption { return func(r *SubmitRequest, _ *string) { r.TimeoutS = s } }

// JobMaxAttempts bounds how often the job is tried.
func JobMaxAttempts(n int) SubmitOption {
	return func(r *SubmitRequest, _ *string) { r.MaxAttempts = n }
}

// JobPriority sets the job's priority, 0..9.
func JobPriority(p int) SubmitOption { return func(r *SubmitRequest, _ *string) { r.Priority = &p } }

// JobRequireCapacity makes the hub answer 503 no_capacity instead of
// queuing when no alive worker could run the job.
func JobRequireCapacity() SubmitOption {
	return func(r *SubmitRequest, _ *string) { r.RequireCapacity = true }
}

// JobIdempotencyKey sets the submission's Idempotency-Key (else one is
// generated, as Submit does).
func JobIdempotencyKey(key string) SubmitOption {
	return func(_ *SubmitRequest, k *string) { *k = key }
}

// SubmitJSON submits a job of mode with params, any value that encodes to
// a JSON object (a struct of the mode's own type, a map, json.RawMessage),
// and returns the job: the typed way to submit a custom mode a worker
// declares. The hub checks params against the mode's declared schema (a
// 400 bad_params *APIError names the field).
func (c *Client) SubmitJSON(ctx context.Context, mode string, params any, opts ...SubmitOption) (Job, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return Job{}, fmt.Errorf("submit %s: encode params: %w", mode, err)
	}
	var fields map[string]json.RawMessage
	if t := bytes.TrimSpace(raw); !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(raw, &fields); err != nil {
			return Job{}, fmt.Errorf("submit %s: params must encode to a JSON object, not %.40s", mode, raw)
		}
	}
	req := SubmitRequest{Mode: mode}
	if len(fields) > 0 {
		req.Params = make(map[string]any, len(fields))
		for k, v := range fields {
			req.Params[k] = v
		}
	}
	key := ""
	for _, o := range opts {
		o(&req, &key)
	}
	return c.Submit(ctx, req, key)
}

// listFilterQuery adds ListOptions' mode, worker, reason and label
// filters to GET /jobs's query.
func listFilterQuery(q url.Values, opts ListOptions) {
	if opts.Mode != "" {
		q.Set("mode", opts.Mode)
	}
	if opts.WorkerID != "" {
		q.Set("worker", opts.WorkerID)
	}
	if opts.Reason != "" {
		q.Set("reason", opts.Reason)
	}
	keys := make([]string, 0, len(opts.Labels))
	for k := range opts.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		q.Add("label", k+"="+opts.Labels[k])
	}
}
