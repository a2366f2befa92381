package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// MaxBatchJobs is how many jobs SubmitMany sends per POST /jobs:batch
// (the hub's bound).
const MaxBatchJobs = 1000

// SubmitResult is one job's answer of SubmitMany: the job, or Err (an
// *APIError with the status and code POST /jobs would have answered).
type SubmitResult struct {
	Job Job
	Err error
}

// batchItem is a POST /jobs:batch item: a job request and its key.
type batchItem struct {
	SubmitRequest
	IdempotencyKey string `json:"idempotency_key"`
}

type batchAnswer struct {
	Results []struct {
		Status int             `json:"status"`
		Job    json.RawMessage `json:"job"`
		Error  struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"results"`
}

// SubmitMany creates many jobs with POST /jobs:batch, MaxBatchJobs per
// request, and answers one SubmitResult per request in order. Each job
// gets its own idempotency key, so a batch retried after a lost answer
// creates no job twice. A job the hub refused has its Err; the returned
// error is for a batch that failed as a whole (the results of the batches
// before it are kept).
func (c *Client) SubmitMany(ctx context.Context, reqs []SubmitRequest) ([]SubmitResult, error) {
	out := make([]SubmitResult, 0, len(reqs))
	for start := 0; start < len(reqs); start += MaxBatchJobs {
		chunk := reqs[start:min(start+MaxBatchJobs, len(reqs))]
		items := make([]batchItem, len(chunk))
		for i, r := range chunk {
			items[i] = batchItem{SubmitRequest: r, IdempotencyKey: NewIdempotencyKey()}
		}
		body, err := marshal(items)
		if err != nil {
			return out, err
		}
		var ans batchAnswer
		err = c.doJSON(ctx, &request{method: http.MethodPost, path: "/jobs:batch", body: body, idempotent: true}, &ans)
		if err != nil {
			return out, err
		}
		if len(ans.Results) != len(chunk) {
			return out, fmt.Errorf("POST /jobs:batch: %d answers for %d jobs", len(ans.Results), len(chunk))
		}
		for _, r := range ans.Results {
			var res SubmitResult
			if r.Status >= 200 && r.Status < 300 {
				if err := json.Unmarshal(r.Job, &res.Job); err != nil {
					res.Err = fmt.Errorf("POST /jobs:batch: decode job: %w", err)
				}
			} else {
				res.Err = &APIError{Status: r.Status, Code: r.Error.Code, Message: r.Error.Message}
			}
			out = append(out, res)
		}
	}
	return out, nil
}
