package messages

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// CDP tunnels (the browser gateway): what the worker link, the session
// grain and the tunnel ends share.

// tunnelSep separates a tunnel id's session id from its own random part:
// a worker's GET /workers/{id}/tunnels/{tunnel_id} names no session, and
// the session grain that vouches for the tunnel is found by identity.
const tunnelSep = "_"

// maxTargetBytes bounds a page target id (Chromium's are 32 hex digits).
const maxTargetBytes = 128

// WebSocket close codes a tunnel uses (RFC 6455 §7.4.1).
const (
	CloseNormal       = 1000 // the session closed, or the other side closed normally
	CloseGoingAway    = 1001 // a hub on the tunnel's path is shutting down
	ClosePolicy       = 1008 // a peer broke the tunnel's flow control
	CloseTooBig       = 1009 // a message over limits.cdp_max_message_bytes
	CloseInternal     = 1011 // the other end, its hub, the worker or the lane went away
	MaxCloseReasonLen = 123  // a close frame's reason: 125 bytes less the code
)

// NewTunnelID is a fresh tunnel id of session sessionID.
func NewTunnelID(sessionID string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return sessionID + tunnelSep + hex.EncodeToString(b)
}

// TunnelSession returns the session id a tunnel id belongs to; ok is false
// for a string that is no tunnel id.
func TunnelSession(tunnelID string) (string, bool) {
	i := strings.LastIndex(tunnelID, tunnelSep)
	if i <= 0 || i == len(tunnelID)-1 || len(tunnelID) > 64 {
		return "", false
	}
	for _, c := range tunnelID {
		if !idChar(c) {
			return "", false
		}
	}
	return tunnelID[:i], true
}

// ValidTarget accepts a CDP target id as Chromium hands them out.
func ValidTarget(s string) bool {
	if s == "" || len(s) > maxTargetBytes {
		return false
	}
	for _, c := range s {
		if !idChar(c) && c != '.' {
			return false
		}
	}
	return true
}

func idChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// CloseReason cuts a close reason to what a close frame carries, on a
// rune boundary.
func CloseReason(s string) string {
	if len(s) <= MaxCloseReasonLen {
		return s
	}
	cut := MaxCloseReasonLen
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut]
}
