package hub

import (
	"context"
	"strings"

	"github.com/paprika-hub/paprika/messages"
)

// ProfilesInUse implements api.ProfilesBackend: the scheduler's profile
// locks (profile → the job or session holding it), from one scheduler
// request. A session holds its lock under its slot key; the API names it
// by its id.
func (h *Hub) ProfilesInUse(ctx context.Context) (map[string]string, error) {
	st, err := h.schedStats(ctx)
	if err != nil {
		return nil, err
	}
	for p, k := range st.ProfilesInUse {
		if id, ok := strings.CutPrefix(k, messages.SessionSlotPrefix); ok {
			st.ProfilesInUse[p] = id
		}
	}
	return st.ProfilesInUse, nil
}
