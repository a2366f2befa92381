package hub

import "context"

// ProfilesInUse implements api.ProfilesBackend: the scheduler's profile
// locks (profile → the job holding it), from one scheduler request.
func (h *Hub) ProfilesInUse(ctx context.Context) (map[string]string, error) {
	st, err := h.schedStats(ctx)
	if err != nil {
		return nil, err
	}
	return st.ProfilesInUse, nil
}
