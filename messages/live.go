package messages

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// The live view (screencasts of a lane): what the API, the live grain,
// the source and viewer actors and the worker share.

// What a screencast shows: a running job's lane or an open session's.
const (
	LiveKindJob     = "job"
	LiveKindSession = "session"
)

// A viewer's status messages ({"type":"status","state":…}).
const (
	LiveWaiting = "waiting" // no frame yet: the worker is starting the screencast
	LiveLive    = "live"    // frames flow
	LiveEnded   = "ended"   // the job ended or the session closed; the socket closes 1000
)

// Input kinds a controlling viewer may send (and the worker dispatches).
const (
	LiveInputMouse = "mouse" // CDP Input.dispatchMouseEvent
	LiveInputKey   = "key"   // CDP Input.dispatchKeyEvent
)

// liveSep separates a live id's parts: kind, target id, random part. Job
// and session ids never contain it.
const liveSep = "."

// LiveIdentity is the live grain's identity for kind's targetID.
func LiveIdentity(kind, targetID string) string { return kind + liveSep + targetID }

// NewLiveID is a fresh screencast id of the live grain identity.
func NewLiveID(identity string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return identity + liveSep + hex.EncodeToString(b)
}

// ParseLiveID splits a live id into its grain identity, kind and target;
// ok is false for a string that is no live id.
func ParseLiveID(liveID string) (identity, kind, target string, ok bool) {
	parts := strings.Split(liveID, liveSep)
	if len(parts) != 3 || len(liveID) > 128 || (parts[0] != LiveKindJob && parts[0] != LiveKindSession) {
		return "", "", "", false
	}
	for _, p := range parts[1:] {
		if p == "" {
			return "", "", "", false
		}
		for _, c := range p {
			if !idChar(c) {
				return "", "", "", false
			}
		}
	}
	return parts[0] + liveSep + parts[1], parts[0], parts[1], true
}

func checkLiveOpen(f *Frame) error {
	_, kind, target, ok := ParseLiveID(f.LiveID)
	switch {
	case !ok:
		return fmt.Errorf("live_id %q is no live id", f.LiveID)
	case kind == LiveKindJob && target != f.JobID, kind == LiveKindSession && target != f.SessionID:
		return fmt.Errorf("live_id %q does not name %s %q", f.LiveID, kind, f.JobID+f.SessionID)
	case f.JobID != "" && f.SessionID != "":
		return errors.New("live_open names a job or a session, not both")
	}
	return nil
}
