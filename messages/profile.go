package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
)

// Profiles (README "Profiles and affinity"): a named browser state a job
// carries from one run to the next, on whichever worker runs it. The hub
// stores it, the scheduler lets one job at a time use it, and the worker's
// chromium driver restores it before the page loads and exports it when the
// job succeeds. Hub and worker read these declarations.

// Bounds of a profile.
const (
	// MaxProfileNameLen bounds a profile name.
	MaxProfileNameLen = 64
	// MaxProfileStateBytes bounds one stored state (its JSON), so a restore
	// is one bounded read and one bounded frame of CDP calls.
	MaxProfileStateBytes = 4 << 20
	// MaxProfileCookies bounds the cookies of a state.
	MaxProfileCookies = 3000
	// MaxProfileOrigins bounds the origins whose localStorage a state holds.
	MaxProfileOrigins = 200
)

// profileNamePattern: lower-case letters, digits, '_' and '-', starting
// with a letter or digit. No dots, so "<name>.json" and "<name>.meta.json"
// never collide in the asset store, and no separators.
var profileNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// ValidProfileName: CheckProfileName takes name.
func ValidProfileName(name string) bool { return CheckProfileName(name) == nil }

// CheckProfileName validates a profile name.
func CheckProfileName(name string) error {
	if len(name) == 0 || len(name) > MaxProfileNameLen || !profileNamePattern.MatchString(name) {
		return fmt.Errorf("%.80q is not a profile name (1..%d of a-z, 0-9, '_' and '-', starting with a letter or digit)", name, MaxProfileNameLen)
	}
	return nil
}

// ProfileState is what a profile holds: the cookies of the job's browser
// context and the localStorage and IndexedDB of the origins its pages had
// at the end. Not captured: sessionStorage, Cache Storage, service workers
// and HTTP cache (README "Profiles and affinity").
type ProfileState struct {
	// Cookies are every cookie of the job's browser context.
	Cookies []Cookie `json:"cookies"`
	// LocalStorage maps an origin (scheme://host[:port]) to its items.
	LocalStorage map[string]map[string]string `json:"local_storage"`
	// IndexedDB maps an origin to its databases (absent: none).
	IndexedDB map[string][]IDBDatabase `json:"indexed_db,omitempty"`
}

// ParseProfileState decodes and checks a state a worker sent.
func ParseProfileState(b []byte) (ProfileState, error) {
	var st ProfileState
	if len(b) > MaxProfileStateBytes {
		return st, fmt.Errorf("profile state of %d bytes, at most %d", len(b), MaxProfileStateBytes)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("profile state: %w", err)
	}
	if len(st.Cookies) > MaxProfileCookies {
		return st, fmt.Errorf("profile state: %d cookies, at most %d", len(st.Cookies), MaxProfileCookies)
	}
	if len(st.LocalStorage) > MaxProfileOrigins {
		return st, fmt.Errorf("profile state: localStorage of %d origins, at most %d", len(st.LocalStorage), MaxProfileOrigins)
	}
	for o := range st.LocalStorage {
		if err := checkOrigin(o); err != nil {
			return st, fmt.Errorf("profile state: %w", err)
		}
	}
	if err := checkIndexedDB(st.IndexedDB); err != nil {
		return st, fmt.Errorf("profile state: %w", err)
	}
	for i, c := range st.Cookies {
		if c.Name == "" || (c.Domain == "" && c.URL == "") {
			return st, fmt.Errorf("profile state: cookie %d needs a name and a domain or url", i)
		}
	}
	return st, nil
}

// checkOrigin accepts scheme://host[:port] of http and https only.
func checkOrigin(o string) error {
	if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" || u.ForceQuery {
		return fmt.Errorf("%.80q is not an http(s) origin", o)
	}
	return nil
}

// ProfileOf reads the profile a job's params name ("" for none): the
// scheduler's lock and the hub's fence read it from the params as stored.
func ProfileOf(params json.RawMessage) string {
	if !bytes.Contains(params, []byte(`"profile"`)) {
		return "" // the common case, without a decode on the enqueue path
	}
	var p struct {
		Profile string `json:"profile"`
	}
	if json.Unmarshal(params, &p) != nil || CheckProfileName(p.Profile) != nil {
		return ""
	}
	return p.Profile
}
