package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/paprika-hub/paprika/internal/backoff"
	"github.com/paprika-hub/paprika/persistence"
)

// Submit creates a job (POST /jobs). idempotencyKey makes retries safe: the
// hub answers a repeated key with the job it already made. When it is "",
// Submit generates one, so its own retries (503, lost connections) never
// create a second job; pass your own key to make your retries safe too.
func (c *Client) Submit(ctx context.Context, req SubmitRequest, idempotencyKey string) (Job, error) {
	if idempotencyKey == "" {
		idempotencyKey = NewIdempotencyKey()
	}
	body, err := marshal(req)
	if err != nil {
		return Job{}, err
	}
	var job Job
	err = c.doJSON(ctx, &request{
		method:     http.MethodPost,
		path:       "/jobs",
		body:       body,
		header:     http.Header{"Idempotency-Key": {idempotencyKey}},
		idempotent: true, // because of the key
	}, &job)
	return job, err
}

// NewIdempotencyKey returns a fresh key for Submit: "pk-" and a ULID
// (persistence.NewJobID: the time in milliseconds, then 80 random bits), so
// keys sort by when they were made. That is for the hub's sake: both job
// stores index the keys in a B-tree, where keys made close together land on
// the same few pages; random keys would each rewrite a page of their own on
// every submit.
func NewIdempotencyKey() string { return "pk-" + persistence.NewJobID() }

// Get returns the job with id (GET /jobs/{id}).
func (c *Client) Get(ctx context.Context, id string) (Job, error) {
	var job Job
	err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/jobs/" + esc(id), idempotent: true}, &job)
	return job, err
}

// List returns one page of jobs, newest first (GET /jobs).
func (c *Client) List(ctx context.Context, opts ListOptions) (Page, error) {
	q := url.Values{}
	if opts.Status != "" {
		q.Set("status", string(opts.Status))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	if opts.Tenant != nil {
		q.Set("tenant", *opts.Tenant)
	}
	if opts.Priority != nil {
		q.Set("priority", strconv.Itoa(*opts.Priority))
	}
	listFilterQuery(q, opts)
	var page Page
	err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/jobs", query: q, idempotent: true}, &page)
	return page, err
}

// Cancel cancels the job (POST /jobs/{id}/cancel) and returns it. Cancelling
// a finished job is a 409 *APIError — unless this very call was retried
// after a first attempt whose answer was lost and the job is now canceled:
// then the retry's 409 is the first attempt's success, and Cancel returns
// the job.
func (c *Client) Cancel(ctx context.Context, id string) (Job, error) {
	req := &request{method: http.MethodPost, path: "/jobs/" + esc(id) + "/cancel", idempotent: true}
	var job Job
	err := c.doJSON(ctx, req, &job)
	if err != nil && req.attempts > 1 && IsStatus(err, http.StatusConflict) {
		if j, gerr := c.Get(ctx, id); gerr == nil && j.Status == StatusCanceled {
			return j, nil
		}
	}
	return job, err
}

// Wait polls the job until its status is final and returns it. The delay
// between polls grows from the poll minimum to the poll maximum (see
// WithPollInterval). It stops with ctx.
func (c *Client) Wait(ctx context.Context, id string) (Job, error) {
	for poll := 0; ; poll++ {
		job, err := c.Get(ctx, id)
		if err != nil {
			return job, err
		}
		if job.Status.Final() {
			return job, nil
		}
		if err := backoff.Sleep(ctx, c.poll.Delay(poll)); err != nil {
			return job, fmt.Errorf("wait for job %s: %w", id, err)
		}
	}
}

// Asset opens a file the job stored (GET /jobs/{id}/assets/{name}) and
// returns its body and content type. The caller closes the body.
func (c *Client) Asset(ctx context.Context, id, name string) (io.ReadCloser, string, error) {
	resp, err := c.do(ctx, &request{
		method:     http.MethodGet,
		path:       "/jobs/" + esc(id) + "/assets/" + esc(name),
		accept:     "*/*",
		idempotent: true,
	})
	if err != nil {
		return nil, "", err
	}
	return resp.Body, resp.Header.Get("Content-Type"), nil
}
