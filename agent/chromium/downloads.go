package chromium

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Bounds and timing of downloads.
const (
	// maxDownloadBytes bounds one download on the worker's disk: Chromium
	// is told to cancel it once it received more. It is the hub's bound on
	// one asset; the hub's limits.max_asset_bytes bounds a job's (or a
	// session's) files together when they are uploaded.
	maxDownloadBytes = 512 << 20
	// maxJobDownloads and maxSessionDownloads bound the files kept; later
	// downloads are cancelled. The hub bounds a session's count again
	// (limits.max_session_downloads).
	maxJobDownloads     = 32
	maxSessionDownloads = 100
	// maxDownloadName bounds a stored file name, in bytes.
	maxDownloadName = 120
	// downloadSettle is how long a macro whose last step is a click or
	// type waits for a download to begin: a click on a download link
	// returns before the browser has the response that makes it a
	// download. Downloads in progress are waited for besides. Not after
	// eval: a macro that ends reading the page (the common last step)
	// would pay it every time; a script that starts a download ends with
	// a wait step instead.
	downloadSettle = 500 * time.Millisecond
	// downloadGrace is how long a job waits after its page work for the
	// downloads in progress to complete (within its deadline); one still
	// running then is cancelled and logged, not stored.
	downloadGrace = 15 * time.Second
	// stepCleanupTimeout bounds the CDP calls that undo a job's settings.
	stepCleanupTimeout = 5 * time.Second
	// sessionUploadGrace bounds, at a session's end, the uploads of the
	// downloads that completed just before.
	sessionUploadGrace = 10 * time.Second
)

// download is one file the page downloads, as the browser reports it.
type download struct {
	guid      string
	url       string
	suggested string
	state     browser.DownloadProgressState // "" until the first progress event
	received  int64
	filePath  string // where the browser says it saved the file, if it says
	over      bool   // refused: past maxDownloadBytes or the count bound
	cancelled bool   // Browser.cancelDownload was sent
	taken     bool   // a session's: run is handing it over
	handled   bool   // a session's: stored, or given up on
}

// finished reports a download that will not change any more.
func (dl *download) finished() bool {
	return dl.state == browser.DownloadProgressStateCompleted || dl.state == browser.DownloadProgressStateCanceled
}

// macroSettle is how long a macro waits for a download to begin after its
// steps: downloadSettle when its last step may just have started one (a
// click, or typing — an Enter submits a form), else nothing. A
// step after the one that started a download gives the browser that time
// itself, and a macro with no such step pays nothing.
func macroSettle(steps []step) time.Duration {
	if len(steps) == 0 {
		return 0
	}
	switch steps[len(steps)-1].Op {
	case messages.OpClick, messages.OpType:
		return downloadSettle
	}
	return 0
}

// storeFunc hands one completed download (a file of size bytes at path)
// over to the hub under name (a file name; the folder is the caller's).
// It returns whether it was kept; an error fails the job.
type storeFunc func(ctx context.Context, name, contentType, path string, size int64) (bool, error)

// jobDownloadStore stores a job's download as its asset downloads/<name>.
// A download the hub refuses as too large (413) is logged and left out;
// the page work that ran is still the job's result.
func (d *Driver) jobDownloadStore(jobID string, log func(string)) storeFunc {
	return func(ctx context.Context, name, contentType, path string, size int64) (bool, error) {
		kept, err := d.storeFile(ctx, jobID, persistence.AssetFolderDownloads+"/"+name, contentType, path, size)
		var je *agent.JobError
		if errors.As(err, &je) && je.Reason == agent.ReasonJobError {
			log(fmt.Sprintf("download %s not stored: %v", name, je.Err))
			return false, nil
		}
		return kept, err
	}
}

// sessionDownloadStore uploads a session's download with
// Config.SessionUpload (PUT /sessions/{id}/downloads/{name}).
func (d *Driver) sessionDownloadStore(sessionID string) storeFunc {
	return func(ctx context.Context, name, contentType, path string, size int64) (bool, error) {
		if d.cfg.SessionUpload == nil {
			return false, nil
		}
		f, err := os.Open(path)
		if err != nil {
			return false, err
		}
		defer f.Close()
		if err := d.cfg.SessionUpload(ctx, sessionID, name, contentType, f, size); err != nil {
			return false, err
		}
		return true, nil
	}
}

// downloads watches the downloads of a lane's one user, a job or a
// session: the browser saves them into dir (Browser.setDownloadBehavior
// allowAndName, events on the driver's browser-level connection) and each
// completed one is handed to the hub as downloads/<name>. A lane has one
// user at a time, so every download the browser reports is this user's.
//
// For a job the driver waits, after the page work, for the downloads to
// complete (collect). For a session each completed download is uploaded
// at once by the watcher's goroutine, and the behavior is set browser
// wide (the default BrowserContext and every one created later, as a
// client driving the lane over CDP would), since the session's user may
// open pages anywhere in the browser.
type downloads struct {
	// Fixed after watchDownloads.
	t        *tab
	dir      string
	maxCount int
	session  bool      // browser wide, uploads as they complete
	store    storeFunc // session: called by run
	log      func(string)
	ctx      context.Context // ends the listener and run
	stop     context.CancelFunc
	done     chan struct{} // closed when run ends

	mu       sync.Mutex
	byGUID   map[string]*download
	order    []*download
	names    map[string]bool               // stored names, for dedupe
	contexts map[cdp.BrowserContextID]bool // contexts the behavior was set in (session)
	newCtx   []cdp.BrowserContextID        // contexts to set it in (session)
	wake     chan struct{}                 // closed and replaced on every change
	errs     []string                      // what went wrong, for the log
	stopOnce sync.Once
}

// watchDownloads starts watching t's downloads into a fresh directory
// under the lane's profile. session selects the session behaviour (see
// downloads); store is its upload, nil for a job.
func watchDownloads(t *tab, session bool, store storeFunc, log func(string)) (*downloads, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	dir := filepath.Join(t.b.dir, userDownloadsDir, hex.EncodeToString(rnd[:]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("download dir: %w", err)
	}
	ctx, stop := context.WithCancel(t.ctx)
	d := &downloads{
		t: t, dir: dir, session: session, store: store, log: log, ctx: ctx, stop: stop,
		done: make(chan struct{}), byGUID: map[string]*download{}, names: map[string]bool{},
		contexts: map[cdp.BrowserContextID]bool{}, wake: make(chan struct{}),
		maxCount: maxJobDownloads,
	}
	if session {
		d.maxCount = maxSessionDownloads
	}
	fail := func(err error) (*downloads, error) {
		stop()
		os.RemoveAll(dir)
		return nil, err
	}
	// Subscribed before the behavior is set, so that no event is missed.
	if err := chromedp.ListenBrowser(ctx, d.onEvent); err != nil {
		return fail(fmt.Errorf("listen for downloads: %w", err))
	}
	if err := d.allow(t.bcID); err != nil {
		return fail(err)
	}
	if session {
		if err := d.allow(""); err != nil { // the default BrowserContext
			return fail(err)
		}
	}
	go d.run()
	return d, nil
}

// allow sets the download behavior of one BrowserContext ("" = the
// default one) to save into d.dir, with events.
func (d *downloads) allow(bc cdp.BrowserContextID) error {
	ctx, cancel := context.WithTimeout(d.ctx, stepCleanupTimeout)
	defer cancel()
	yes := true
	_, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, BrowserContextID: bc, DownloadPath: d.dir, EventsEnabled: &yes,
	})
	if err != nil {
		return fmt.Errorf("allow downloads: %w", err)
	}
	d.mu.Lock()
	d.contexts[bc] = true
	d.mu.Unlock()
	return nil
}

// onEvent runs on chromedp's reader goroutine: it records and returns.
func (d *downloads) onEvent(ev any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch ev := ev.(type) {
	case *browser.EventDownloadWillBegin:
		if d.byGUID[ev.GUID] != nil {
			return
		}
		dl := &download{guid: ev.GUID, url: ev.URL, suggested: ev.SuggestedFilename}
		if len(d.order) >= d.maxCount {
			dl.over = true
			d.errs = append(d.errs, fmt.Sprintf("download %s refused: more than %d downloads", ev.URL, d.maxCount))
		}
		d.byGUID[ev.GUID] = dl
		d.order = append(d.order, dl)
	case *browser.EventDownloadProgress:
		dl := d.byGUID[ev.GUID]
		if dl == nil {
			return
		}
		dl.state, dl.received = ev.State, int64(ev.ReceivedBytes)
		if ev.FilePath != "" {
			dl.filePath = ev.FilePath
		}
		if !dl.over && (dl.received > maxDownloadBytes || int64(ev.TotalBytes) > maxDownloadBytes) {
			dl.over = true
			d.errs = append(d.errs, fmt.Sprintf("download %s refused: larger than %d bytes", dl.url, maxDownloadBytes))
		}
	case *target.EventTargetCreated:
		if !d.session || ev.TargetInfo == nil {
			return
		}
		bc := ev.TargetInfo.BrowserContextID
		if bc != "" && !d.contexts[bc] && !containsID(d.newCtx, bc) {
			d.newCtx = append(d.newCtx, bc)
		}
	default:
		return
	}
	close(d.wake)
	d.wake = make(chan struct{})
}

func containsID(ids []cdp.BrowserContextID, id cdp.BrowserContextID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// run is the watcher's goroutine: it cancels refused downloads, sets the
// behavior in new BrowserContexts and, for a session, uploads each
// completed download. It ends when d.ctx does.
func (d *downloads) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		wake := d.wake
		var cancel []*download
		var ready []*download
		for _, dl := range d.order {
			if dl.over && !dl.cancelled && !dl.finished() {
				dl.cancelled = true
				cancel = append(cancel, dl)
			}
			if d.session && !dl.taken && dl.finished() {
				dl.taken = true
				ready = append(ready, dl)
			}
		}
		newCtx := d.newCtx
		d.newCtx = nil
		d.mu.Unlock()

		for _, dl := range cancel {
			d.cancelDownload(dl)
		}
		for _, bc := range newCtx {
			if err := d.allow(bc); err != nil && d.ctx.Err() == nil {
				d.t.l.d.log.Debug("allow downloads in a new context", "lane", d.t.l.idx, "err", err)
			}
		}
		for _, dl := range ready {
			d.keep(d.ctx, dl)
			d.mu.Lock()
			dl.handled = true
			close(d.wake) // flush waits for this
			d.wake = make(chan struct{})
			d.mu.Unlock()
		}
		select {
		case <-wake:
		case <-d.ctx.Done():
			return
		}
	}
}

// cancelDownload asks the browser to stop a refused download, in every
// context it may belong to.
func (d *downloads) cancelDownload(dl *download) {
	d.mu.Lock()
	var bcs []cdp.BrowserContextID
	for bc := range d.contexts {
		bcs = append(bcs, bc)
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(d.ctx, stepCleanupTimeout)
	defer cancel()
	for _, bc := range bcs {
		_, _ = chromedp.CallBrowser(ctx, browser.CancelDownload, browser.CancelDownloadParams{GUID: dl.guid, BrowserContextID: bc})
	}
}

// collect waits for the job's downloads after its page work, stores the
// completed ones and returns their asset names. settle is how long to
// wait for a first download to begin when none has (0: not at all). It
// stops the watcher; the caller still calls close, which removes the
// files.
func (d *downloads) collect(ctx context.Context, settle time.Duration, store storeFunc) ([]string, error) {
	d.wait(ctx, settle)
	d.stop()
	<-d.done
	d.mu.Lock()
	list := append([]*download(nil), d.order...)
	errs := d.errs
	d.mu.Unlock()
	for _, e := range errs {
		d.log(e)
	}
	var names []string
	for _, dl := range list {
		switch {
		case dl.over:
			continue
		case dl.state != browser.DownloadProgressStateCompleted:
			d.log(fmt.Sprintf("download %s not stored: %s after the page work", dl.url, orState(dl.state)))
			continue
		}
		name, err := d.keepWith(ctx, dl, store)
		if err != nil {
			return names, err
		}
		if name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// orState names a download's state for the log.
func orState(s browser.DownloadProgressState) string {
	switch s {
	case "", browser.DownloadProgressStateInProgress:
		return "still in progress"
	}
	return string(s)
}

// wait returns once no download is in progress and settle (0: none) has
// passed, so that a download a last click started is seen; at most
// downloadGrace, and never past ctx.
func (d *downloads) wait(ctx context.Context, settle time.Duration) {
	grace := time.NewTimer(downloadGrace)
	defer grace.Stop()
	var settleC <-chan time.Time
	if settle > 0 {
		st := time.NewTimer(settle)
		defer st.Stop()
		settleC = st.C
	}
	for {
		d.mu.Lock()
		wake, busy := d.wake, false
		for _, dl := range d.order {
			if !dl.over && !dl.finished() {
				busy = true
			}
		}
		d.mu.Unlock()
		if !busy && settleC == nil {
			return
		}
		select {
		case <-wake:
		case <-settleC:
			settleC = nil
		case <-grace.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// keep stores one completed download of a session with d.store.
func (d *downloads) keep(ctx context.Context, dl *download) {
	if dl.over || dl.state != browser.DownloadProgressStateCompleted {
		if !dl.over {
			d.log(fmt.Sprintf("download %s %s", dl.url, orState(dl.state)))
		}
		d.removeFile(dl)
		return
	}
	if _, err := d.keepWith(ctx, dl, d.store); err != nil && ctx.Err() == nil {
		d.log(fmt.Sprintf("download %s not stored: %v", dl.url, err))
	}
}

// keepWith hands one completed download to store under a sanitized,
// unique name and removes its file; it returns the asset name, or "" when
// store did not keep it.
func (d *downloads) keepWith(ctx context.Context, dl *download, store storeFunc) (string, error) {
	defer d.removeFile(dl)
	p := d.filePath(dl)
	st, err := os.Stat(p)
	if err != nil {
		d.log(fmt.Sprintf("download %s not stored: %v", dl.url, err))
		return "", nil
	}
	if st.Size() > maxDownloadBytes {
		d.log(fmt.Sprintf("download %s not stored: larger than %d bytes", dl.url, maxDownloadBytes))
		return "", nil
	}
	d.mu.Lock()
	name := uniqueName(sanitizeFilename(dl.suggested, dl.url), d.names)
	d.names[name] = true
	d.mu.Unlock()
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	kept, err := store(ctx, name, ct, p, st.Size())
	if err != nil {
		return "", err
	}
	d.log(fmt.Sprintf("download %s %d bytes%s", name, st.Size(), storedNote(kept)))
	if !kept {
		return "", nil
	}
	return persistence.AssetFolderDownloads + "/" + name, nil
}

// filePath is where the browser saved dl: allowAndName names the file by
// its guid in d.dir. A path the browser reports is used only inside d.dir.
func (d *downloads) filePath(dl *download) string {
	if dl.filePath != "" {
		if rel, err := filepath.Rel(d.dir, dl.filePath); err == nil && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
			return dl.filePath
		}
	}
	return filepath.Join(d.dir, filepath.Base(dl.guid))
}

func (d *downloads) removeFile(dl *download) {
	if err := os.Remove(d.filePath(dl)); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.t.l.d.log.Warn("remove download", "lane", d.t.l.idx, "err", err)
	}
}

// close stops the watcher, for a session after the uploads of the
// downloads completed so far (bounded by sessionUploadGrace), resets the
// default BrowserContext's behavior it set, and removes the directory with
// whatever is left in it. Safe to call twice.
func (d *downloads) close() {
	d.stopOnce.Do(func() {
		if d.session {
			d.flush()
		}
		d.stop()
		<-d.done
		if d.session {
			d.mu.Lock()
			reset := d.contexts[""]
			d.mu.Unlock()
			if reset && d.t.b.ctx.Err() == nil {
				ctx, cancel := context.WithTimeout(d.t.b.ctx, stepCleanupTimeout)
				_, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDefault})
				cancel()
				if err != nil {
					d.t.l.markSuspect(fmt.Sprintf("resetting the download behavior failed: %v", err))
				}
			}
		}
		if err := os.RemoveAll(d.dir); err != nil {
			d.t.l.d.log.Warn("remove download dir", "lane", d.t.l.idx, "dir", d.dir, "err", err)
		}
	})
}

// flush waits until run has handed over every download that completed,
// at most sessionUploadGrace.
func (d *downloads) flush() {
	deadline := time.NewTimer(sessionUploadGrace)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		wake, left := d.wake, false
		for _, dl := range d.order {
			if dl.finished() && !dl.handled {
				left = true
			}
		}
		d.mu.Unlock()
		if !left {
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			return
		case <-d.ctx.Done():
			return
		}
	}
}

// sanitizeFilename makes a page's suggested file name (or, without one,
// the last element of its URL's path) safe as an asset name: no path
// separators, control or formatting characters (bidi overrides), no
// leading dot, valid UTF-8, at most maxDownloadName bytes with its
// extension kept.
func sanitizeFilename(suggested, rawURL string) string {
	name := suggested
	if name == "" {
		if u, err := url.Parse(rawURL); err == nil {
			name = path.Base(u.Path)
		}
	}
	name = strings.ToValidUTF8(name, "_")
	name = strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r == 0:
			return '_'
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ". ")
	name = strings.TrimRight(name, ". ")
	if name == "" || name == "_" {
		name = "download"
	}
	if len(name) > maxDownloadName {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		name = truncUTF8(strings.TrimSuffix(name, ext), maxDownloadName-len(ext)) + ext
	}
	if persistence.CheckAssetName(name) != nil {
		return "download"
	}
	return name
}

// truncUTF8 cuts s to at most n bytes on a rune boundary.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// uniqueName returns name, or "stem (2).ext", "stem (3).ext", … when taken.
func uniqueName(name string, taken map[string]bool) string {
	if !taken[name] {
		return name
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 2; ; i++ {
		suffix := " (" + strconv.Itoa(i) + ")"
		n := truncUTF8(stem, maxDownloadName-len(ext)-len(suffix)) + suffix + ext
		if !taken[n] {
			return n
		}
	}
}
