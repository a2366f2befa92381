package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Profiles (README "Profiles and affinity") live in the asset store: the
// state of profile <name> is ProfilesFolder/<name>.json, its metadata
// ProfilesFolder/<name>.meta.json. Job ids never equal "profiles"
// (NewID), so the folder is the profiles' alone. The API writes both; the
// scheduler reads the metadata to know where each profile ran last.

// ProfilesFolder is the asset-store "job id" under which profiles live.
const ProfilesFolder = "profiles"

// Suffixes of a profile's two objects in ProfilesFolder.
const (
	ProfileStateSuffix = ".json"
	ProfileMetaSuffix  = ".meta.json"
)

// maxProfileMetaBytes bounds one metadata read (it is ~200 bytes).
const maxProfileMetaBytes = 64 << 10

// ProfileMeta is a profile's metadata: who wrote its state last (a job's
// attempt, or a session: Session set, Job and Attempt empty).
type ProfileMeta struct {
	UpdatedAt time.Time `json:"updated_at"`
	Worker    string    `json:"last_worker"`
	Job       string    `json:"last_job"`
	Attempt   int       `json:"last_attempt"`
	Session   string    `json:"last_session,omitempty"`
}

// ReadProfileMeta reads profile name's metadata; ErrNotFound when it has
// none (never saved).
func ReadProfileMeta(ctx context.Context, assets AssetStore, name string) (ProfileMeta, error) {
	var m ProfileMeta
	rc, _, err := assets.Get(ctx, ProfilesFolder, name+ProfileMetaSuffix)
	if err != nil {
		return m, err
	}
	defer rc.Close()
	if err := json.NewDecoder(io.LimitReader(rc, maxProfileMetaBytes)).Decode(&m); err != nil {
		return m, fmt.Errorf("profile %s metadata: %w", name, err)
	}
	return m, nil
}

// SavedProfile is a profile with a saved state: its name and the state's
// size.
type SavedProfile struct {
	Name  string
	Bytes int64
}

// SavedProfiles lists the profiles with a saved state, in the store's
// order (by name), at most max of them. valid filters out names the
// profile rules refuse (an object put there by hand).
func SavedProfiles(ctx context.Context, assets AssetStore, max int, valid func(string) bool) ([]SavedProfile, error) {
	all, err := assets.List(ctx, ProfilesFolder)
	if err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	var out []SavedProfile
	for _, a := range all {
		name, ok := strings.CutSuffix(a.Name, ProfileStateSuffix)
		if !ok || strings.HasSuffix(a.Name, ProfileMetaSuffix) || !valid(name) {
			continue
		}
		if len(out) == max {
			break
		}
		out = append(out, SavedProfile{Name: name, Bytes: a.Size})
	}
	return out, nil
}

// ProfileSpot is where a profile's last holder ran: its worker, and the
// lane on it when known.
type ProfileSpot struct {
	Worker, Lane string
}

// LastProfileSpots reads where each saved profile ran last (at most max
// profiles): the worker from its metadata and, for a job's save, the lane
// its job's record gives for that attempt. A fresh scheduler activation
// starts its affinity memory from it. A profile whose metadata or job
// cannot be read is left out (or has no lane); only a failed listing, or
// ctx ending, is an error, with what was read so far.
func LastProfileSpots(ctx context.Context, assets AssetStore, jobs JobStore, max int, valid func(string) bool) (map[string]ProfileSpot, error) {
	saved, err := SavedProfiles(ctx, assets, max, valid)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ProfileSpot, len(saved))
	for _, p := range saved {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("profile spots: %d found in %d profiles before: %w", len(out), len(saved), err)
		}
		name := p.Name
		m, err := ReadProfileMeta(ctx, assets, name)
		if err != nil || m.Worker == "" {
			continue
		}
		spot := ProfileSpot{Worker: m.Worker}
		if m.Job != "" && jobs != nil {
			if j, err := jobs.Get(ctx, m.Job); err == nil && j.Attempts == m.Attempt && j.WorkerID == m.Worker {
				spot.Lane = j.Lane
			}
		}
		out[name] = spot
	}
	return out, nil
}
