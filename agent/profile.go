package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// profileReadTimeout bounds the read of a profile's state.
const profileReadTimeout = 30 * time.Second

// profileURL is {hub}/profiles/{name}/state?job=<id>&attempt=<n>, or
// ?session=<id> for a session's slot key (messages.SessionSlotPrefix and
// the id; attempt unused): the hub's fence (API: README "Profiles and
// affinity").
func profileURL(base, name, holder string, attempt int) (string, error) {
	u, err := assetURL(base, "/profiles/", name, "/state", "")
	if err != nil {
		return "", err
	}
	if id, ok := strings.CutPrefix(holder, messages.SessionSlotPrefix); ok {
		return u + "?" + url.Values{"session": {id}}.Encode(), nil
	}
	return u + "?" + url.Values{"job": {holder}, "attempt": {strconv.Itoa(attempt)}}.Encode(), nil
}

// LoadProfile reads the state of profile name for attempt of job holder,
// or for the session whose slot key holder is (messages.SessionSlotPrefix
// and its id): GET {hub}/profiles/{name}/state with the worker's
// credential. A profile with no state yet answers nil and no error. A
// refusal (the hub does not see this worker holding the attempt or the
// session) is an *UploadError. It has the shape of
// chromium.ProfileLoadFunc.
func (a *Agent) LoadProfile(ctx context.Context, name, holder string, attempt int) ([]byte, error) {
	u, err := profileURL(a.uploadBase(), name, holder, attempt)
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

// SaveProfile writes the state of profile name from attempt of job
// holder, or from a session (holder as for LoadProfile): PUT
// {hub}/profiles/{name}/state, retried as UploadAsset is. The hub refuses
// a stale attempt or a closed session (409) and a worker not holding the
// job or session (403). It has the shape of chromium.ProfileSaveFunc.
func (a *Agent) SaveProfile(ctx context.Context, name, holder string, attempt int, state []byte) error {
	return a.uploadTo(ctx, "profile "+name+" of "+holder, "holder", holder, func(base string) (string, error) {
		return profileURL(base, name, holder, attempt)
	}, "application/json", bytes.NewReader(state), int64(len(state)))
}
