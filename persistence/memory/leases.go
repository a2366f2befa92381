package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// lease is a stored value and the deadline its TTL set.
type lease[T any] struct {
	val     T
	expires time.Time
}

// alive reports whether the lease still holds at now.
func (e lease[T]) alive(now time.Time) bool { return now.Before(e.expires) }

// leases holds values by id until their TTL passes, as Redis keys with PX
// do: the hub, worker and session stores each keep theirs in one. Expiry is
// a deadline compared on every read; nothing runs in the background. The
// store's lock guards it.
type leases[T any] map[string]lease[T]

// put stores v as id until ttl after now.
func (l leases[T]) put(id string, v T, now time.Time, ttl time.Duration) {
	l[id] = lease[T]{val: v, expires: now.Add(ttl)}
}

// live returns the unexpired lease of id, forgetting an expired one.
func (l leases[T]) live(id string, now time.Time) (lease[T], bool) {
	e, ok := l[id]
	if ok && !e.alive(now) {
		delete(l, id)
		ok = false
	}
	return e, ok
}

// sweep forgets every lease expired at now.
func (l leases[T]) sweep(now time.Time) {
	maps.DeleteFunc(l, func(_ string, e lease[T]) bool { return !e.alive(now) })
}

// byID returns view of every lease, in id order; never nil.
func byID[T, V any](l leases[T], view func(lease[T]) V) []V {
	out := make([]V, 0, len(l))
	for _, id := range slices.Sorted(maps.Keys(l)) {
		out = append(out, view(l[id]))
	}
	return out
}

// checkTTLWrite is the start of every write with a TTL: the context, then
// the id and TTL as persistence.CheckTTLWrite wants them.
func checkTTLWrite(ctx context.Context, op, id string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, id, err)
	}
	return persistence.CheckTTLWrite(op, id, ttl)
}
