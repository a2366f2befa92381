package api

import (
	"context"
	"errors"
	"fmt"
	"github.com/paprika-hub/paprika/messages"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/internal/backoff"
	"github.com/paprika-hub/paprika/persistence"
)

// followPoll re-reads the stored log while following, in case the live feed
// was dropped (Redis closes slow subscribers) or a batch was missed.
const followPoll = 2 * time.Second

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if _, err := s.b.Job(r.Context(), id); err != nil {
		writeError(w, notFound(err, "job", id))
		return
	}
	from, err := startIndex(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if f := r.URL.Query().Get("follow"); f == "1" || f == "true" {
		s.follow(w, r, id, from)
		return
	}
	lines, _, err := s.b.Logs().Read(r.Context(), id, from, 0)
	if err != nil {
		writeError(w, fmt.Errorf("read log of job %s: %w", id, err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, _ = w.Write([]byte(b.String()))
}

// startIndex reads ?from=N, or the SSE Last-Event-ID (the index of the last
// line received) so a reconnecting follower resumes without gap or duplicate.
func startIndex(r *http.Request) (int64, error) {
	if v := r.URL.Query().Get("from"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, Errorf(http.StatusBadRequest, "bad_from", "from %q is not a line index >= 0", v)
		}
		return n, nil
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, Errorf(http.StatusBadRequest, "bad_last_event_id", "Last-Event-ID %q is not a line index", v)
		}
		return n + 1, nil
	}
	return 0, nil
}

// follow streams a log as server-sent events: subscribe first, then read the
// backlog, then take live batches, skipping indexes already sent. Each line
// is one event whose id is its index; the stream ends with "event: done".
func (s *Server) follow(w http.ResponseWriter, r *http.Request, id string, next int64) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, Errorf(http.StatusInternalServerError, "no_streaming", "this connection cannot stream"))
		return
	}
	// A follower that stops reading would hold this goroutine, its
	// subscription and the connection for the job's whole life: every
	// event gets a write deadline, and a missed one ends the follow (the
	// connection is dropped; a client resumes with Last-Event-ID).
	ctx, stop := context.WithCancelCause(r.Context())
	defer stop(nil)
	rc := http.NewResponseController(w)
	// net/http resets a write deadline only when it has a WriteTimeout of
	// its own: lift it, or the connection's next request inherits it.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	writeTimeout := s.opts.FollowWriteTimeout
	if writeTimeout <= 0 {
		writeTimeout = defaultFollowWriteTimeout
	}
	stalled := func(err error) {
		if err != nil && ctx.Err() == nil {
			s.log.Debug("log follow dropped", "job", id, "err", err)
			stop(errWriteStalled)
		}
	}
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(writeTimeout)) }
	flusher = flushFunc(func() {
		if ctx.Err() == nil {
			deadline()
			stalled(rc.Flush())
		}
	})
	store := s.b.Logs()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	send := func(lines []string, from int64) {
		for i, l := range lines {
			idx := from + int64(i)
			if idx < next || ctx.Err() != nil {
				continue
			}
			deadline()
			var ev strings.Builder
			fmt.Fprintf(&ev, "id: %d\n", idx)
			for _, part := range strings.Split(l, "\n") {
				fmt.Fprintf(&ev, "data: %s\n", part)
			}
			ev.WriteString("\n")
			_, err := io.WriteString(w, ev.String())
			stalled(err)
			next = idx + 1
		}
	}
	// catchUp reads the store from next; true when the log is done.
	catchUp := func() (bool, error) {
		lines, done, err := store.Read(ctx, id, next, 0)
		if err != nil {
			return false, err
		}
		send(lines, next)
		flusher.Flush()
		return done, nil
	}
	for ctx.Err() == nil {
		sub, err := store.Subscribe(ctx, id)
		if err != nil {
			_ = backoff.Sleep(ctx, followPoll) // an ended ctx ends the loop
			continue
		}
		done, err := catchUp()
		if err == nil && done {
			_ = sub.Close()
			deadline()
			fmt.Fprint(w, "event: done\ndata: \n\n")
			flusher.Flush()
			return
		}
		if s.stream(ctx, sub, send, catchUp, flusher) {
			deadline()
			fmt.Fprint(w, "event: done\ndata: \n\n")
			flusher.Flush()
			return
		}
		// the feed ended (dropped as a slow subscriber): resume by index
	}
}

// stream relays live batches until the log is done (true) or the feed ends.
func (s *Server) stream(ctx context.Context, sub persistence.LogSubscription, send func([]string, int64),
	catchUp func() (bool, error), flusher http.Flusher) bool {
	defer sub.Close()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-sub.C():
			if !ok {
				return false
			}
			send(ev.Lines, ev.From)
			flusher.Flush()
			if ev.Done {
				done, err := catchUp() // anything a gap held back
				return err == nil && done || err != nil
			}
		case <-tick.C:
			if done, err := catchUp(); err == nil && done {
				return true
			}
		}
	}
}

// assetRoom is how many bytes job id may still store under name within
// limits.max_asset_bytes: the bound less its other assets (an asset
// uploaded again replaces itself, so its old size does not count).
func (s *Server) assetRoom(ctx context.Context, id, name string) (int64, error) {
	infos, err := s.b.Assets().List(ctx, id)
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		return 0, fmt.Errorf("list assets of job %s: %w", id, err)
	}
	used := int64(0)
	for _, a := range infos {
		if a.Name != name {
			used += max(a.Size, 0)
		}
	}
	return max(s.limits.MaxAssetBytes-used, 0), nil
}

// assetsFull is the 413 of an upload past limits.max_asset_bytes.
func (s *Server) assetsFull(room int64) *Error {
	e := Errorf(http.StatusRequestEntityTooLarge, "job_assets_too_large",
		"the job's assets may take %d bytes more (limits.max_asset_bytes is %d)", room, s.limits.MaxAssetBytes)
	e.Extra = map[string]any{"limit": "limits.max_asset_bytes", "max": s.limits.MaxAssetBytes, "room": room}
	return e
}

// flushFunc is an http.Flusher made of a function.
type flushFunc func()

func (f flushFunc) Flush() { f() }

// maxAssetBytes bounds one uploaded asset.
const maxAssetBytes = 512 << 20

func (s *Server) putAsset(w http.ResponseWriter, r *http.Request, workerID string) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	name, ok := assetName(w, r)
	if !ok {
		return
	}
	if r.ContentLength > maxAssetBytes {
		writeError(w, Errorf(http.StatusRequestEntityTooLarge, "asset_too_large", "an asset may have at most %d bytes", maxAssetBytes))
		return
	}
	j, err := s.b.Job(r.Context(), id)
	if err != nil {
		writeError(w, notFound(err, "job", id))
		return
	}
	if workerID != "" && (j.Status != persistence.StatusRunning || j.WorkerID != workerID) {
		// Only the worker running the job may add to its assets: another
		// worker's credential (or a late upload after the job moved on)
		// changes nothing.
		writeError(w, Errorf(http.StatusForbidden, string(messages.CodeNotHolder), "worker %s does not hold job %s", workerID, id))
		return
	}
	room, err := s.assetRoom(r.Context(), id, name)
	if err != nil {
		writeError(w, err)
		return
	}
	if r.ContentLength > room {
		writeError(w, s.assetsFull(room))
		return
	}
	ct := r.Header.Get("Content-Type")
	// An upload of unknown length is cut at whichever bound comes first.
	body := http.MaxBytesReader(w, r.Body, min(maxAssetBytes, room))
	if err := s.b.Assets().Put(r.Context(), id, name, ct, body, r.ContentLength); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			if room < maxAssetBytes {
				writeError(w, s.assetsFull(room))
				return
			}
			writeError(w, Errorf(http.StatusRequestEntityTooLarge, "asset_too_large", "an asset may have at most %d bytes", maxAssetBytes))
			return
		}
		if !errors.Is(err, persistence.ErrUnavailable) {
			err = Errorf(http.StatusBadRequest, "bad_asset", "store asset %s/%s: %v", id, name, err)
		}
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	name, ok := assetName(w, r)
	if !ok {
		return
	}
	if isSessionID(id) {
		// A session's downloads share the asset store, under the session
		// id; they are served by /sessions/{id}/downloads, not as a job's.
		writeError(w, Errorf(http.StatusNotFound, "not_found", "no asset %s/%s", id, name))
		return
	}
	rc, info, err := s.b.Assets().Get(r.Context(), id, name)
	if err != nil {
		writeError(w, notFound(err, "asset", id+"/"+name))
		return
	}
	defer rc.Close()
	setAssetHeaders(w.Header(), info.ContentType, name)
	if info.Size >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	}
	_, _ = ioCopy(w, rc)
}

// assetName reads the {name} of an asset route, answering 400 when no asset
// store could hold it (the stores' own rule), so a bad name is the caller's
// fault and not a store error or a miss.
func assetName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if err := persistence.CheckAssetPath(name); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_asset_name", "asset name: %v", err))
		return "", false
	}
	return name, true
}
