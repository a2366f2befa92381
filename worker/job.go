package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/agent"
)

// maxBufferedUpload is the most of a reader of unknown length Upload keeps
// in memory, so that a failed upload attempt can be sent again.
const maxBufferedUpload = 16 << 20

// ErrNoLane is returned by Job.Lane for a mode not registered with
// NeedsChromium.
var ErrNoLane = errors.New("this mode was not registered with worker.NeedsChromium(): it has no browser lane")

// Job is one attempt of a job, as its handler sees it. Its methods are safe
// for concurrent use by the handler's goroutines.
type Job struct {
	w        *Worker
	raw      agent.Job
	lane     int
	laneName string
	emit     func(string) error
	ctx      context.Context
	chromium bool // the mode needs a chromium lane

	mu          sync.Mutex
	assets      []string
	laneOnce    bool
	laneHandle  *Lane
	laneErr     error
	laneRelease func()
}

// ID is the job id.
func (j *Job) ID() string { return j.raw.ID }

// Attempt is the attempt number (1 for the first run).
func (j *Job) Attempt() int { return j.raw.Attempt }

// Mode is the job's mode.
func (j *Job) Mode() string { return j.raw.Mode }

// Params is the job's params as the hub sent them (may be empty).
func (j *Job) Params() json.RawMessage { return j.raw.Params }

// Deadline is the job's deadline; ok is false when it has none. The
// handler's context ends then.
func (j *Job) Deadline() (deadline time.Time, ok bool) {
	return j.raw.Deadline, !j.raw.Deadline.IsZero()
}

// Decode decodes the job's params into v (absent params decode as {}).
// Its error is Permanent: params that do not decode will not decode on
// another attempt either.
func (j *Job) Decode(v any) error {
	raw := bytes.TrimSpace(j.raw.Params)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return Permanent(fmt.Errorf("params of mode %s: %w", j.raw.Mode, err))
	}
	return nil
}

// Log appends one line to the job's live log (GET /jobs/{id}/logs). Lines
// are kept and re-sent across a lost link until the hub acknowledges the
// job; a line longer than 64 KiB is cut. Lines logged after the context
// ended are dropped.
func (j *Job) Log(line string) { _ = j.emit(line) }

// Logf is Log with fmt.Sprintf.
func (j *Job) Logf(format string, args ...any) { j.Log(fmt.Sprintf(format, args...)) }

// Upload stores an asset of the job on the hub (PUT /jobs/{id}/assets/
// {name}, retried on network errors and 5xx) and lists it in the job's
// assets. name must be a valid asset name (the hub refuses others with
// the error returned here); r is read to its end.
func (j *Job) Upload(name, contentType string, r io.Reader) error {
	a := j.w.agentOf()
	if a == nil {
		return errors.New("upload: the worker is not running")
	}
	size := int64(-1)
	switch b := r.(type) {
	case *bytes.Reader:
		size = int64(b.Len())
	case *strings.Reader:
		size = int64(b.Len())
	case *bytes.Buffer:
		size = int64(b.Len())
	case *os.File:
		if st, err := b.Stat(); err == nil && st.Mode().IsRegular() {
			if off, err := b.Seek(0, io.SeekCurrent); err == nil {
				size = st.Size() - off
			}
		}
	default:
		// Buffered, so that a failed attempt can be sent again; a larger
		// body gets one attempt.
		head, err := io.ReadAll(io.LimitReader(r, maxBufferedUpload+1))
		if err != nil {
			return fmt.Errorf("upload %s: read: %w", name, err)
		}
		if len(head) <= maxBufferedUpload {
			r, size = bytes.NewReader(head), int64(len(head))
		} else {
			r = io.MultiReader(bytes.NewReader(head), r)
		}
	}
	if err := a.UploadAsset(j.ctx, j.raw.ID, name, contentType, r, size); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, n := range j.assets {
		if n == name {
			return nil
		}
	}
	j.assets = append(j.assets, name)
	return nil
}

// Lane is the job's Chromium lane, for a mode registered with
// NeedsChromium (else ErrNoLane). The first call waits for the lane's
// browser to be up (starting or restarting it); later calls return the
// same lane. The browser is the handler's until it returns; then the
// worker cleans it for the next job (every page and BrowserContext the
// handler opened is closed). An error keeps its reason (lane_error when
// the browser cannot start) if the handler returns it.
func (j *Job) Lane() (*Lane, error) {
	if !j.chromium {
		return nil, ErrNoLane
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.laneOnce {
		return j.laneHandle, j.laneErr
	}
	j.laneOnce = true
	url, release, err := j.w.chrome.UseLane(j.ctx, j.lane, j.Log)
	if err != nil {
		j.laneErr = err
		return nil, err
	}
	j.laneRelease = release
	j.laneHandle = &Lane{index: j.lane, name: j.laneName, devtools: url}
	return j.laneHandle, nil
}

// releaseLane gives the lane's browser back after the handler returned.
func (j *Job) releaseLane() {
	j.mu.Lock()
	release := j.laneRelease
	j.laneRelease = nil
	j.mu.Unlock()
	if release != nil {
		release()
	}
}

// assetNames is what Upload stored.
func (j *Job) assetNames() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.assets...)
}

// Lane is a Chromium lane held by one job.
type Lane struct {
	index    int
	name     string
	devtools string
}

// Index is the lane's number on the worker (0-based).
func (l *Lane) Index() int { return l.index }

// Name is the lane's public name (chromium://<worker>/lane/<n>), as the
// job object's lane shows it.
func (l *Lane) Name() string { return l.name }

// DevToolsURL is the browser-level CDP WebSocket endpoint of the lane's
// Chromium (ws://127.0.0.1:<port>/devtools/browser/<id>), for
// chromedp.NewRemoteAllocator or any CDP client. It stays on the worker:
// the hub never sees it.
func (l *Lane) DevToolsURL() string { return l.devtools }
