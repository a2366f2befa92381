package client

import (
	"context"
	"net/http"
)

// Retry runs a failed job again under a new attempt (POST
// /jobs/{id}/retry) and returns it, queued. Its attempts stay counted and
// max_attempts grows to allow the new one. A job that is not failed is a
// 409 *APIError with code "not_failed".
func (c *Client) Retry(ctx context.Context, id string) (Job, error) {
	var job Job
	// Not idempotent: a retry of a lost answer could run the job twice.
	err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/jobs/" + esc(id) + "/retry"}, &job)
	return job, err
}
