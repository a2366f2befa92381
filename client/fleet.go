package client

import (
	"context"
	"net/http"
)

// Workers lists the fleet's workers (GET /workers), as seen cluster-wide.
func (c *Client) Workers(ctx context.Context) ([]Worker, error) {
	var out struct {
		Workers []Worker `json:"workers"`
	}
	err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/workers", idempotent: true}, &out)
	return out.Workers, err
}

// SetWorkerStatus sets a worker's status (PATCH /workers/{id}) to
// WorkerActive, WorkerDrain or WorkerStandby and returns the worker.
func (c *Client) SetWorkerStatus(ctx context.Context, id, status string) (Worker, error) {
	body, err := marshal(map[string]string{"status": status})
	if err != nil {
		return Worker{}, err
	}
	var w Worker
	err = c.doJSON(ctx, &request{
		method:     http.MethodPatch,
		path:       "/workers/" + esc(id),
		body:       body,
		idempotent: true, // setting a value twice is setting it once
	}, &w)
	return w, err
}

// Hubs lists the cluster's hubs (GET /hubs), recently dead ones included
// with Alive false.
func (c *Client) Hubs(ctx context.Context) ([]Hub, error) {
	var out struct {
		Hubs []Hub `json:"hubs"`
	}
	err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/hubs", idempotent: true}, &out)
	return out.Hubs, err
}
