package chromium

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"

	"github.com/chromedp/cdproto/cdp"
	cdpio "github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/agent"
)

// Bounds of the fetch mode's full_page screenshot and pdf.
const (
	// maxFullPageSide caps each side of a full-page screenshot, in CSS
	// pixels: a page taller than this is cut at it. Chromium's own
	// compositor limit is 16384 as well, and at 1280×16384 the PNG is tens
	// of MiB, not the gigabytes an endless page would make.
	maxFullPageSide = 16384
	// maxPDFBytes bounds page.pdf on the worker (the hub's own bounds,
	// 512 MiB per asset and limits.max_asset_bytes per job, apply on
	// upload).
	maxPDFBytes = 256 << 20
	// pdfReadChunk is one IO.read of the PDF stream: the PDF goes to a file
	// a MiB at a time, never whole through the DevTools socket.
	pdfReadChunk = 1 << 20
	assetPDF     = "page.pdf"
	typePDF      = "application/pdf"
)

// errPDFTooLarge fails a fetch whose page prints to more than maxPDFBytes.
var errPDFTooLarge = fmt.Errorf("page.pdf is larger than %d bytes", maxPDFBytes)

// fullPageScreenshot captures the whole document (its scrollable size,
// from the layout metrics), not only the viewport; each side is capped at
// maxFullPageSide. cut reports that the page was taller or wider.
func fullPageScreenshot(ctx context.Context) (png []byte, cut bool, err error) {
	m, err := chromedp.Call(ctx, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return nil, false, fmt.Errorf("layout metrics: %w", err)
	}
	if m.CSSContentSize == nil {
		return nil, false, errors.New("layout metrics: no content size")
	}
	w, h := math.Ceil(m.CSSContentSize.Width), math.Ceil(m.CSSContentSize.Height)
	cut = w > maxFullPageSide || h > maxFullPageSide
	w, h = min(max(w, 1), maxFullPageSide), min(max(h, 1), maxFullPageSide)
	yes := true
	r, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Clip:                  &page.Viewport{Width: w, Height: h, Scale: 1},
		CaptureBeyondViewport: &yes,
		FromSurface:           &yes,
	})
	if err != nil {
		return nil, false, err
	}
	return r.Data, cut, nil
}

// printPDF prints the page (backgrounds included) into a new file in dir,
// streamed a chunk at a time, and returns its path and size. The caller
// removes the file.
func printPDF(ctx context.Context, dir string) (path string, size int64, err error) {
	yes := true
	r, err := chromedp.Call(ctx, page.PrintToPDF, page.PrintToPDFParams{
		PrintBackground: &yes,
		TransferMode:    page.PrintToPDFTransferModeReturnAsStream,
	})
	if err != nil {
		return "", 0, err
	}
	defer func() {
		// A context of its own: the stream is freed even when ctx ended.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepCleanupTimeout)
		defer cancel()
		_, _ = chromedp.Call(cctx, cdpio.Close, cdpio.CloseParams{Handle: r.Stream})
	}()
	f, err := os.CreateTemp(dir, "page-*.pdf")
	if err != nil {
		return "", 0, fmt.Errorf("pdf file: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("pdf file: %w", cerr)
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	for {
		chunk, err := chromedp.Call(ctx, cdpio.Read, cdpio.ReadParams{Handle: r.Stream, Size: pdfReadChunk})
		if err != nil {
			return "", 0, fmt.Errorf("read the pdf: %w", err)
		}
		if size+int64(len(chunk.Data)) > maxPDFBytes {
			return "", 0, errPDFTooLarge
		}
		if _, err := f.Write(chunk.Data); err != nil {
			return "", 0, fmt.Errorf("pdf file: %w", err)
		}
		size += int64(len(chunk.Data))
		if chunk.EOF {
			return f.Name(), size, nil
		}
	}
}

// captureFullPage takes the full_page screenshot under a step's budget.
func (d *Driver) captureFullPage(rctx context.Context, t *tab) ([]byte, bool, error) {
	sctx, cancel := context.WithTimeoutCause(rctx, d.cfg.StepTimeout, &stepTimeoutError{d: d.cfg.StepTimeout, what: "capturing the page"})
	defer cancel()
	png, cut, err := fullPageScreenshot(sctx)
	if err != nil {
		return nil, false, failure(t.failure(sctx, err), "full-page screenshot")
	}
	return png, cut, nil
}

// storePDF prints the page to page.pdf (under a step's budget) and
// uploads it from its file, which it then removes.
func (d *Driver) storePDF(ctx, rctx context.Context, t *tab, jobID string, log func(string)) (bool, error) {
	sctx, cancel := context.WithTimeoutCause(rctx, d.cfg.StepTimeout, &stepTimeoutError{d: d.cfg.StepTimeout, what: "printing the page"})
	defer cancel()
	p, size, err := printPDF(sctx, t.b.dir)
	if errors.Is(err, errPDFTooLarge) {
		return false, agent.Fail(agent.ReasonJobError, "pdf: %v", err)
	}
	if err != nil {
		return false, failure(t.failure(sctx, err), "pdf")
	}
	defer os.Remove(p)
	stored, err := d.storeFile(ctx, jobID, assetPDF, typePDF, p, size)
	if err != nil {
		return false, err
	}
	log(fmt.Sprintf("page.pdf %d bytes%s", size, storedNote(stored)))
	return stored, nil
}

// storeFile is store for a file on disk: the uploader reads (and may
// re-read) it instead of a copy in memory.
func (d *Driver) storeFile(ctx context.Context, jobID, name, contentType, path string, size int64) (bool, error) {
	if d.cfg.Upload == nil {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, agent.Fail(agent.ReasonLaneError, "store asset %s: %v", name, err)
	}
	defer f.Close()
	if err := d.cfg.Upload(ctx, jobID, name, contentType, f, size); err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("store asset %s: %w", name, err)
		}
		if isTooLarge(err) {
			return false, agent.Fail(agent.ReasonJobError, "store asset %s: %v", name, err)
		}
		return false, agent.Fail(agent.ReasonLaneError, "store asset %s: %v", name, err)
	}
	return true, nil
}

// isTooLarge reports the hub's 413: the asset, or the job's assets
// together, are over its bounds (limits.max_asset_bytes).
func isTooLarge(err error) bool {
	var ue *agent.UploadError
	return errors.As(err, &ue) && ue.StatusCode == http.StatusRequestEntityTooLarge
}
