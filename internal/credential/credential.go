// Package credential makes and checks the credentials that bind a worker
// to its id. A worker credential is "pw1.<id>.<mac>", the mac an HMAC-SHA256
// of the id under the hub's auth.worker_secret: a hub checks it without a
// table of issued tokens, and the holder of one worker's credential cannot
// present it for another id. Anyone holding the secret can mint any
// worker's credential, so the secret stays with the hubs and the operator.
package credential

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// prefix versions the format, so a later one can be told apart.
const prefix = "pw1."

// MinSecretBytes is the shortest auth.worker_secret a hub accepts: an HMAC
// key shorter than this is guessable.
const MinSecretBytes = 16

// ValidID reports whether id may name a worker (or a job, a session): 1 to
// 64 of A-Z a-z 0-9 _ -. A dot is not among them, which keeps a credential
// unambiguous.
func ValidID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Worker returns the credential of worker id under secret.
func Worker(secret, id string) string {
	return prefix + id + "." + mac(secret, id)
}

// WorkerID checks a worker credential under secret and returns the id it
// is bound to; false when it is malformed or was not made with secret.
func WorkerID(secret, token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok || secret == "" {
		return "", false
	}
	// Ids hold no dot (ValidID), base64url no dot either: the last dot
	// splits them.
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	id, got := rest[:i], rest[i+1:]
	if !hmac.Equal([]byte(got), []byte(mac(secret, id))) {
		return "", false
	}
	return id, true
}

func mac(secret, id string) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte("paprika worker credential\x00" + id))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
