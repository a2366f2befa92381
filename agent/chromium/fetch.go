package chromium

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// Asset names and types of the fetch mode (API.md "Job modes").
const (
	assetHTML       = "page.html"
	assetScreenshot = "screenshot.png"
	typeHTML        = "text/html; charset=utf-8"
	typePNG         = "image/png"
)

// htmlJS serializes the document as it is now (after scripts ran), with
// its doctype.
const htmlJS = `(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + "\n" : "") + document.documentElement.outerHTML`

// fetchParams are the params of the fetch mode.
type fetchParams struct {
	URL        string `json:"url"`
	WaitFor    string `json:"wait_for,omitempty"`
	Screenshot *bool  `json:"screenshot,omitempty"`
	messages.BrowserOptions
	PDF      bool `json:"pdf,omitempty"`       // also store page.pdf
	FullPage bool `json:"full_page,omitempty"` // screenshot the whole page (capped at maxFullPageSide)
}

// fetchResult is the result of the fetch mode.
type fetchResult struct {
	Status   int64  `json:"status"`
	FinalURL string `json:"final_url"`
	Title    string `json:"title"`
}

// parseFetchParams decodes and checks fetch params.
func parseFetchParams(raw json.RawMessage) (fetchParams, error) {
	var p fetchParams
	if err := decodeStrict(raw, &p); err != nil {
		return p, fmt.Errorf("fetch params: %w", err)
	}
	if p.URL == "" {
		return p, fmt.Errorf("fetch params: url is required")
	}
	if err := checkURL(p.URL); err != nil {
		return p, fmt.Errorf("fetch params: %w", err)
	}
	if err := p.BrowserOptions.Validate(); err != nil {
		return p, fmt.Errorf("fetch params: %w", err)
	}
	return p, nil
}

// runFetch loads the page, checks its status, optionally waits for a
// selector, then stores page.html and (unless screenshot is false)
// screenshot.png.
func (d *Driver) runFetch(ctx context.Context, t *tab, job agent.Job, p fetchParams, log func(string)) (agent.Result, error) {
	log("navigate " + p.URL)
	out, err := t.runStep(ctx, step{Op: messages.OpNavigate, URL: p.URL, AnyStatus: true}, d.cfg.StepTimeout)
	if err != nil {
		return agent.Result{}, failure(err, "navigate "+p.URL)
	}
	res := fetchResult{Status: out.result["status"].(int64), FinalURL: out.result["url"].(string), Title: out.result["title"].(string)}
	log(fmt.Sprintf("status %d", res.Status))
	if !okStatus(res.Status) {
		return agent.Result{}, agent.Fail(agent.ReasonJobError, "http status %d (%s)", res.Status, res.FinalURL)
	}
	if p.WaitFor != "" {
		log("wait_for " + p.WaitFor)
		if _, err := t.runStep(ctx, step{Op: messages.OpWait, Selector: p.WaitFor}, d.cfg.StepTimeout); err != nil {
			return agent.Result{}, failure(err, "wait_for "+p.WaitFor)
		}
	}

	var assets []string
	rctx, done := t.bind(ctx)
	defer done()
	// Read the title and URL again: scripts may have changed them while
	// the job waited for its selector.
	html, err := chromedp.Run(rctx, chromedp.Evaluate[string](htmlJS))
	if err == nil {
		res.Title, err = chromedp.Run(rctx, chromedp.Title())
	}
	if err == nil {
		res.FinalURL, err = chromedp.Run(rctx, chromedp.Location())
	}
	if err != nil {
		return agent.Result{}, failure(t.failure(rctx, err), "read the page")
	}
	stored, err := d.store(ctx, job.ID, assetHTML, typeHTML, []byte(html))
	if err != nil {
		return agent.Result{}, err
	}
	log(fmt.Sprintf("page.html %d bytes%s", len(html), storedNote(stored)))
	if stored {
		assets = append(assets, assetHTML)
	}

	if p.Screenshot == nil || *p.Screenshot {
		var png []byte
		note := ""
		if p.FullPage {
			var cut bool
			png, cut, err = d.captureFullPage(rctx, t)
			if err != nil {
				return agent.Result{}, err
			}
			if cut {
				note = fmt.Sprintf(" (page cut at %d px)", maxFullPageSide)
			}
		} else {
			out, err := t.runStep(ctx, step{Op: messages.OpScreenshot}, d.cfg.StepTimeout)
			if err != nil {
				return agent.Result{}, failure(err, "screenshot")
			}
			png = out.png
		}
		stored, err := d.store(ctx, job.ID, assetScreenshot, typePNG, png)
		if err != nil {
			return agent.Result{}, err
		}
		log(fmt.Sprintf("screenshot %d bytes%s%s", len(png), note, storedNote(stored)))
		if stored {
			assets = append(assets, assetScreenshot)
		}
	}
	if p.PDF {
		stored, err := d.storePDF(ctx, rctx, t, job.ID, log)
		if err != nil {
			return agent.Result{}, err
		}
		if stored {
			assets = append(assets, assetPDF)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return agent.Result{}, fmt.Errorf("encode fetch result: %w", err)
	}
	return agent.Result{JSON: b, Assets: assets}, nil
}

// store uploads one asset. It reports false, and no error, when the driver
// has no uploader.
func (d *Driver) store(ctx context.Context, jobID, name, contentType string, data []byte) (bool, error) {
	if d.cfg.Upload == nil {
		return false, nil
	}
	// A bytes.Reader is an io.ReadSeeker: the uploader can retry.
	if err := d.cfg.Upload(ctx, jobID, name, contentType, bytes.NewReader(data), int64(len(data))); err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("store asset %s: %w", name, err)
		}
		if isTooLarge(err) {
			// The job's own assets outgrew the hub's bound.
			return false, agent.Fail(agent.ReasonJobError, "store asset %s: %v", name, err)
		}
		// The page is fine; the worker could not hand its file over.
		return false, agent.Fail(agent.ReasonLaneError, "store asset %s: %v", name, err)
	}
	return true, nil
}

// storedNote is the log suffix for an asset that was not stored.
func storedNote(stored bool) string {
	if stored {
		return ""
	}
	return " (not stored: no uploader configured)"
}

// decodeStrict decodes raw (empty or null means no fields) into v,
// refusing unknown fields.
func decodeStrict(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}
