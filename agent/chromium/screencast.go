package chromium

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Recording (record: true): the page of a job or session is screencast
// for as long as it runs and its frames are stored as recording.ndjson,
// one JSON line per frame: {"t": ms since the first frame, "w", "h",
// "data": base64 JPEG}. A job's recording is one of its assets; a
// session's is kept with its downloads.
const (
	// RecordingName and RecordingType name the stored recording.
	RecordingName = "recording.ndjson"
	RecordingType = "application/x-ndjson"
	// RecordFPS bounds the frames kept a second: Chromium paints at up to
	// 60, a replay needs few.
	RecordFPS = 5
	// RecordMaxBytes bounds a recording; past it, recording stops (the
	// frames so far are kept). A job's assets together are bounded by the
	// hub's limits.max_asset_bytes as well.
	RecordMaxBytes = 32 << 20
	// recordStoreWait bounds storing a session's recording as it closes.
	recordStoreWait = 30 * time.Second
	// Frames are JPEG at this quality, scaled to fit the box.
	recordQuality   = 50
	recordMaxWidth  = 1280
	recordMaxHeight = 800
)

// recorder keeps a tab's screencast frames, within bounds.
type recorder struct {
	t     *tab
	acks  chan int64 // screencast session ids to acknowledge, for the acker
	done  chan struct{}
	acker sync.WaitGroup

	mu      sync.Mutex
	buf     bytes.Buffer
	first   time.Time
	last    time.Time
	frames  int
	full    bool
	stopped bool
}

// startRecording starts recording t's page; nil when the page refuses
// (the job or session runs on without a recording, and log says why).
func startRecording(ctx context.Context, t *tab, log func(string)) *recorder {
	r := &recorder{t: t, acks: make(chan int64, 1), done: make(chan struct{})}
	if err := chromedp.Listen(t.ctx, func(ev any) {
		if e, ok := ev.(*page.EventScreencastFrame); ok {
			r.add(e)
		}
	}); err != nil {
		log(fmt.Sprintf("recording not started: %v", err))
		return nil
	}
	// Each frame is acknowledged off the event loop: Chromium sends the
	// next only then, and the listener must not wait on the browser.
	// Acks are paced at RecordFPS, so Chromium encodes no frame that
	// would be dropped.
	r.acker.Go(func() {
		var last time.Time
		for {
			select {
			case id := <-r.acks:
				if wait := time.Second/RecordFPS - time.Since(last); wait > 0 {
					tm := time.NewTimer(wait)
					select {
					case <-tm.C:
					case <-r.done:
						tm.Stop()
						return
					}
				}
				last = time.Now()
				_, _ = chromedp.Call(t.ctx, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: id})
			case <-r.done:
				return
			}
		}
	})
	rctx, cancel := t.bind(ctx)
	defer cancel()
	q := int64(recordQuality)
	_, err := chromedp.Call(rctx, page.StartScreencast, page.StartScreencastParams{Format: page.StartScreencastFormatJpeg,
		Quality: &q, MaxWidth: recordMaxWidth, MaxHeight: recordMaxHeight})
	if err != nil {
		log(fmt.Sprintf("recording not started: %v", err))
		r.stop()
		return nil
	}
	log(fmt.Sprintf("recording the page (at most %d frames a second, %d MiB)", RecordFPS, RecordMaxBytes>>20))
	return r
}

func (r *recorder) add(e *page.EventScreencastFrame) {
	now := time.Now()
	r.mu.Lock()
	keep := !r.full && !r.stopped && (r.frames == 0 || now.Sub(r.last) >= time.Second/RecordFPS)
	if keep {
		if r.frames == 0 {
			r.first = now
		}
		w, h := 0, 0
		if e.Metadata != nil {
			w, h = int(e.Metadata.DeviceWidth), int(e.Metadata.DeviceHeight)
		}
		// data is []byte: JSON encodes it as base64, as Chromium sent it.
		line, _ := json.Marshal(map[string]any{"t": now.Sub(r.first).Milliseconds(), "w": w, "h": h, "data": e.Data})
		if r.buf.Len()+len(line)+1 > RecordMaxBytes {
			r.full = true
		} else {
			r.buf.Write(line)
			r.buf.WriteByte('\n')
			r.frames++
			r.last = now
		}
	}
	r.mu.Unlock()
	select {
	case r.acks <- e.SessionID:
	default: // one pending ack is enough: Chromium waits for it
	}
}

// stop ends the screencast and the acker (safe twice).
func (r *recorder) stop() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	r.mu.Unlock()
	close(r.done)
	r.acker.Wait()
	_, _ = chromedp.Call(r.t.ctx, page.StopScreencast, cdp.Empty{})
}

// finish stops recording and returns what was recorded (nil: no frame).
func (r *recorder) finish() (data []byte, frames int) {
	if r == nil {
		return nil, 0
	}
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frames == 0 {
		return nil, 0
	}
	return r.buf.Bytes(), r.frames
}

// storeJobRecording stores a job's recording as its asset; the asset's
// name, or "" when there was nothing to store.
func (d *Driver) storeJobRecording(ctx context.Context, jobID string, r *recorder, log func(string)) (string, error) {
	data, frames := r.finish()
	if data == nil {
		return "", nil
	}
	stored, err := d.store(ctx, jobID, RecordingName, RecordingType, data)
	if err != nil || !stored {
		return "", err
	}
	log(fmt.Sprintf("recording stored: %d frames, %d bytes", frames, len(data)))
	return RecordingName, nil
}

// storeSessionRecording keeps a session's recording with its downloads.
func (d *Driver) storeSessionRecording(ctx context.Context, sessionID string, r *recorder) {
	data, frames := r.finish()
	if data == nil || d.cfg.SessionUpload == nil {
		return
	}
	if err := d.cfg.SessionUpload(ctx, sessionID, RecordingName, RecordingType, bytes.NewReader(data), int64(len(data))); err != nil {
		d.log.Warn("session recording not stored", "session_id", sessionID, "err", err)
		return
	}
	d.log.Info("session recording stored", "session_id", sessionID, "frames", frames, "bytes", len(data))
}
