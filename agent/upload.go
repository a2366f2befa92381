package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/internal/backoff"
)

// Upload tuning.
const (
	// uploadAttempts is how many times an asset is sent before giving up
	// (network errors, 5xx, 408 and 429 are retried; other answers are not).
	uploadAttempts = 4
	// uploadBackoffMin and uploadBackoffMax bound the pause between attempts
	// (doubling, jittered); a Retry-After up to uploadBackoffMax is honoured.
	uploadBackoffMin = 200 * time.Millisecond
	uploadBackoffMax = 5 * time.Second
	// uploadAttemptTimeout bounds one attempt.
	uploadAttemptTimeout = 2 * time.Minute
	// maxBufferedUpload is the largest reader of unknown kind that is
	// buffered in memory so that it can be sent again; a larger one gets a
	// single attempt. Readers with ReadAt (bytes.Reader, os.File) are never
	// buffered.
	maxBufferedUpload = 16 << 20
)

// uploadBackoff is the pause after failed attempt number n+1 (doubling,
// jittered over its upper half like the reconnects).
var uploadBackoff = backoff.Policy{Base: uploadBackoffMin, Max: uploadBackoffMax, Jitter: 0.5}

// UploadError is a hub's refusal of an asset: an answer other than 2xx.
type UploadError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code and Message come from the hub's error body, when it has one.
	Code, Message string
}

// Error implements error.
func (e *UploadError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("hub answered HTTP %d", e.StatusCode)
	}
	return fmt.Sprintf("hub answered HTTP %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// Temporary reports whether sending again may succeed (5xx, 408, 429).
func (e *UploadError) Temporary() bool {
	return e.StatusCode >= 500 || e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests
}

// newUploadClient is the agent's HTTP client for assets. It has a transport
// of its own, so that Run can close its idle connections when it ends, and
// trusts the link's CAs (tlsConf; nil keeps Go's defaults).
func newUploadClient(tlsConf *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tlsConf != nil {
		tr.TLSClientConfig = tlsConf.Clone()
	}
	return &http.Client{Transport: tr}
}

// UploadAsset stores one asset of a job on the hub: PUT
// {hub}/jobs/{jobID}/assets/{name} with the worker token, to the hub the
// agent is linked to (or linked to last; the first of Config.HubURLs before
// any link). The hub answers 204. size is the body's length (-1 if
// unknown). Network errors and 5xx answers are retried a few times with
// backoff when the body can be read again: r has ReadAt (bytes.Reader,
// os.File) or is at most 16 MiB long (then it is buffered); otherwise one
// attempt is made. A refusal is returned as an *UploadError. It is safe for
// concurrent use, and has the shape of chromium.UploadFunc.
func (a *Agent) UploadAsset(ctx context.Context, jobID, name, contentType string, r io.Reader, size int64) error {
	return a.uploadTo(ctx, "asset "+name+" of job "+jobID, "job_id", jobID, func(base string) (string, error) {
		return assetURL(base, "/jobs/", jobID, "/assets/", name)
	}, contentType, r, size)
}

// UploadSessionDownload stores a file a session's page downloaded on the
// hub: PUT {hub}/sessions/{sessionID}/downloads/{name}, as UploadAsset does
// (the same retries, credential and hub). The hub takes it only from the
// worker holding the open session. It has the shape of
// chromium.UploadFunc, with the session id for the job id.
func (a *Agent) UploadSessionDownload(ctx context.Context, sessionID, name, contentType string, r io.Reader, size int64) error {
	return a.uploadTo(ctx, "download "+name+" of session "+sessionID, "session_id", sessionID, func(base string) (string, error) {
		return assetURL(base, "/sessions/", sessionID, "/downloads/", name)
	}, contentType, r, size)
}

// uploadTo sends one file to the URL build makes of the hub's base URL,
// retrying as UploadAsset says; what names it in errors, idKey and id in
// the log.
func (a *Agent) uploadTo(ctx context.Context, what, idKey, id string, build func(base string) (string, error), contentType string, r io.Reader, size int64) error {
	body, err := replayable(r, size)
	if err != nil {
		return fmt.Errorf("upload %s: %w", what, err)
	}
	for attempt := 1; ; attempt++ {
		u, err := build(a.uploadBase())
		if err != nil {
			return fmt.Errorf("upload %s: %w", what, err)
		}
		retryAfter, err := a.putAsset(ctx, u, contentType, body, size)
		if err == nil {
			return nil
		}
		err = fmt.Errorf("upload %s to %s (attempt %d of %d): %w", what, u, attempt, uploadAttempts, err)
		if attempt == uploadAttempts || !body.again() || !retryable(ctx, err) {
			return err
		}
		delay := max(uploadBackoff.Delay(attempt-1), min(retryAfter, uploadBackoffMax))
		a.lg().Warn("upload failed; retrying", idKey, id, "what", what, "retry_in", delay, "err", err)
		if err := backoff.Sleep(ctx, delay); err != nil {
			return fmt.Errorf("upload %s: %w", what, err)
		}
	}
}

// putAsset makes one attempt. retryAfter is the hub's Retry-After, if any.
func (a *Agent) putAsset(ctx context.Context, u, contentType string, body *uploadBody, size int64) (retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, uploadAttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, body.reader())
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	// A fresh reader per attempt (and per redirect): the transport may
	// still read the previous one after a failed attempt returned.
	if body.at != nil {
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body.reader()), nil }
	}
	req.ContentLength = size
	if size == 0 {
		req.Body, req.GetBody = http.NoBody, nil
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if a.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.cfg.Token)
	}
	resp, err := a.upload.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		return 0, nil
	}
	return refusal(resp)
}

// refusal reads a hub's non-2xx answer as an *UploadError and its
// Retry-After.
func refusal(resp *http.Response) (retryAfter time.Duration, err error) {
	ue := &UploadError{StatusCode: resp.StatusCode}
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if data, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10)); json.Unmarshal(data, &eb) == nil {
		ue.Code, ue.Message = eb.Error.Code, eb.Error.Message
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return retryAfter, ue
}

// retryable tells transient failures (network, 5xx, 408, 429) from final
// ones (other 4xx, the caller's context ending).
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ue *UploadError
	if errors.As(err, &ue) {
		return ue.Temporary()
	}
	var ne net.Error
	var ue2 *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue2) || errors.Is(err, io.ErrUnexpectedEOF)
}

// uploadBase is the hub assets go to.
func (a *Agent) uploadBase() string {
	if p := a.hubURL.Load(); p != nil {
		return *p
	}
	return a.cfg.HubURLs[0]
}

// assetURL builds {base}{kind}{id}{sub}{name} (e.g. /jobs/<id>/assets/<name>),
// turning a ws(s):// hub URL into http(s)://. The id and the name are
// escaped as one path element each.
func assetURL(base, kind, id, sub, name string) (string, error) {
	u, err := parseHubURL(base, "http", "https")
	if err != nil {
		return "", err
	}
	rawPrefix := strings.TrimRight(u.EscapedPath(), "/")
	u.Path = strings.TrimRight(u.Path, "/") + kind + id + sub + name
	u.RawPath = rawPrefix + kind + url.PathEscape(id) + sub + url.PathEscape(name)
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

// uploadBody hands out a fresh reader of the same bytes for every attempt,
// or the one reader it has (then only one attempt is possible).
type uploadBody struct {
	at   io.ReaderAt // with off and n, when the body can be re-read
	off  int64
	n    int64
	once io.Reader // the reader itself, when it cannot
	used bool
}

// replayable prepares r for sending, possibly more than once.
func replayable(r io.Reader, size int64) (*uploadBody, error) {
	if ra, ok := r.(io.ReaderAt); ok && size >= 0 {
		var off int64
		if s, ok := r.(io.Seeker); ok {
			var err error
			if off, err = s.Seek(0, io.SeekCurrent); err != nil {
				return nil, fmt.Errorf("find the body's offset: %w", err)
			}
		}
		return &uploadBody{at: ra, off: off, n: size}, nil
	}
	if size >= 0 && size <= maxBufferedUpload {
		data, err := io.ReadAll(io.LimitReader(r, size+1))
		if err != nil {
			return nil, fmt.Errorf("read the body: %w", err)
		}
		if int64(len(data)) != size {
			return nil, fmt.Errorf("body has %d bytes, size says %d", len(data), size)
		}
		return &uploadBody{at: bytes.NewReader(data), n: size}, nil
	}
	return &uploadBody{once: r}, nil
}

// reader returns the body for one attempt.
func (b *uploadBody) reader() io.Reader {
	if b.at != nil {
		return io.NewSectionReader(b.at, b.off, b.n)
	}
	b.used = true
	return b.once
}

// again reports whether the body can be sent once more.
func (b *uploadBody) again() bool { return b.at != nil || !b.used }
