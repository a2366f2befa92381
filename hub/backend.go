package hub

import (
	"context"
	"errors"

	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/persistence"
)

var _ api.Backend = (*Hub)(nil)

// Logs implements api.Backend.
func (h *Hub) Logs() persistence.LogStore { return h.stores.Logs }

// Assets implements api.Backend.
func (h *Hub) Assets() persistence.AssetStore { return h.stores.Assets }

// Ready checks each store with a cheap read.
func (h *Hub) Ready(ctx context.Context) map[string]error {
	res := map[string]error{}
	_, _, err := h.stores.Jobs.List(ctx, persistence.ListQuery{Limit: 1})
	res["jobs"] = err
	_, err = h.stores.Logs.Len(ctx, "readyz")
	res["logs"] = err
	_, err = h.stores.Workers.List(ctx)
	res["workers"] = err
	if _, err := h.stores.Assets.List(ctx, "readyz"); err != nil && !errors.Is(err, persistence.ErrNotFound) {
		res["assets"] = err
	} else {
		res["assets"] = nil
	}
	return res
}
