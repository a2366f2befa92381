package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// profileReadTimeout bounds the read of a profile's state.
const profileReadTimeout = 30 * time.Second

// profileURL is {hub}/profiles/{name}/state?job=<id>&attempt=<n>: the
// attempt is the hub's fence (API: README "Profiles and affinity").
func profileURL(base, name, jobID string, attempt int) (string, error) {
	u, err := assetURL(base, "/profiles/", name, "/state", "")
	if err != nil {
		return "", err
	}
	return u + "?" + url.Values{"job": {jobID}, "attempt": {strconv.Itoa(attempt)}}.Encode(), nil
}

// LoadProfile reads the state of profile name for attempt of job jobID:
// GET {hub}/profiles/{name}/state with the worker's credential. A profile
// with no state yet answers nil and no error. A refusal (the hub does not
// see this worker holding the attempt) is an *UploadError. It has the
// shape of chromium.ProfileLoadFunc.
func (a *Agent) LoadProfile(ctx context.Context, name, jobID string, attempt int) ([]byte, error) {
	u, err := profileURL(a.uploadBase(), name, jobID, attempt)
	if err != nil {
		return nil, fmt.Errorf("load profile %s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, profileReadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("load profile %s: %w", name, err)
	}
	if a.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.cfg.Token)
	}
	resp, err := a.upload.Do(req)
	if err != nil {
		return nil, fmt.Errorf("load profile %s: %w", name, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, nil
	case resp.StatusCode != http.StatusOK:
		_, err := refusal(resp)
		return nil, fmt.Errorf("load profile %s: %w", name, err)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, messages.MaxProfileStateBytes+1))
	if err != nil {
		return nil, fmt.Errorf("load profile %s: %w", name, err)
	}
	if len(b) > messages.MaxProfileStateBytes {
		return nil, fmt.Errorf("load profile %s: more than %d bytes", name, messages.MaxProfileStateBytes)
	}
	return b, nil
}

// SaveProfile writes the state of profile name from attempt of job jobID:
// PUT {hub}/profiles/{name}/state, retried as UploadAsset is. The hub
// refuses a stale attempt (409) and a worker not holding the job (403).
// It has the shape of chromium.ProfileSaveFunc.
func (a *Agent) SaveProfile(ctx context.Context, name, jobID string, attempt int, state []byte) error {
	return a.uploadTo(ctx, "profile "+name+" of job "+jobID, "job_id", jobID, func(base string) (string, error) {
		return profileURL(base, name, jobID, attempt)
	}, "application/json", bytes.NewReader(state), int64(len(state)))
}
