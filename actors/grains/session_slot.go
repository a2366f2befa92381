package grains

import (
	"strings"

	"github.com/paprika-hub/paprika/messages"
)

// A session holds its lane as a reservation among the worker grain's
// running jobs, under the key "session:<id>" (SchedPlaced and
// SchedPlaceFailed carry it as job_id). The prefix tells the two apart
// wherever a slot key is read.

// sessionSlotPrefix starts a session's key among a worker's reservations
// (messages declares it: a running list may name one).
const sessionSlotPrefix = messages.SessionSlotPrefix

// sessionSlot is the key a session's lane has among a worker's
// reservations, beside job ids.
func sessionSlot(id string) string { return sessionSlotPrefix + id }

// isSessionSlot reports whether a reservation key is a session's rather
// than a job's.
func isSessionSlot(key string) bool { return strings.HasPrefix(key, sessionSlotPrefix) }

// slotSession returns the session id of a session's reservation key; ok is
// false for a job's.
func slotSession(key string) (id string, ok bool) { return strings.CutPrefix(key, sessionSlotPrefix) }
