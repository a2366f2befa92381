package chromium

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/internal/backoff"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Limits that keep a step's result, a job's result and a session_result
// below the worker link's 1 MiB frame limit.
const (
	maxTextBytes   = 256 << 10 // a text op's result is cut here ("truncated": true)
	maxEvalBytes   = 256 << 10 // an eval op's larger result fails the step
	maxWaitMS      = 10 * 60 * 1000
	maxStepTimeout = 10 * time.Minute
)

// allowedSchemes are the URL schemes a job may navigate to (of about:,
// only about:blank). file: is left out on purpose: page.html would hand the
// worker's files to whoever submits a job; chrome: and the like reach the
// browser's internals.
var allowedSchemes = map[string]bool{"http": true, "https": true, "about": true, "data": true}

// step is one macro step or session command; Op is one of messages.Op*,
// whose fields doc.go documents.
type step struct {
	Op         string  `json:"op"`
	URL        string  `json:"url,omitempty"`        // navigate
	Selector   string  `json:"selector,omitempty"`   // click, type, wait, text, screenshot (optional)
	Text       *string `json:"text,omitempty"`       // type
	Expression string  `json:"expression,omitempty"` // eval
	MS         int64   `json:"ms,omitempty"`         // wait
	Name       string  `json:"name,omitempty"`       // screenshot (macro asset name)
	Visible    bool    `json:"visible,omitempty"`    // wait: until visible, not just present
	Gone       bool    `json:"gone,omitempty"`       // wait: until no element matches
	Clear      bool    `json:"clear,omitempty"`      // type: clear the field first
	AnyStatus  bool    `json:"any_status,omitempty"` // navigate: accept a non-2xx status
	TimeoutMS  int64   `json:"timeout_ms,omitempty"` // any op: instead of Config.StepTimeout
}

// parseStep decodes and checks one step. Unknown fields are refused, so a
// misspelt field fails the job instead of being ignored.
func parseStep(raw json.RawMessage) (step, error) {
	var s step
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("decode: %w", err)
	}
	return s, s.validate()
}

// validate checks the fields the op needs.
func (s step) validate() error {
	var errs []error
	need := func(ok bool, field string) {
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s is required", s.Op, field))
		}
	}
	switch s.Op {
	case messages.OpNavigate:
		need(s.URL != "", "url")
		if s.URL != "" {
			if err := checkURL(s.URL); err != nil {
				errs = append(errs, err)
			}
		}
	case messages.OpClick, messages.OpText:
		need(s.Selector != "", "selector")
	case messages.OpType:
		need(s.Selector != "", "selector")
		need(s.Text != nil, "text")
	case messages.OpWait:
		if (s.Selector == "") == (s.MS == 0) {
			errs = append(errs, errors.New("wait: give either selector or ms"))
		}
		if s.MS < 0 || s.MS > maxWaitMS {
			errs = append(errs, fmt.Errorf("wait: ms %d out of range 1..%d", s.MS, maxWaitMS))
		}
		if s.Visible && s.Gone {
			errs = append(errs, errors.New("wait: visible and gone exclude each other"))
		}
	case messages.OpScreenshot:
		if s.Name != "" {
			// What the hub's asset stores accept, checked before the job
			// runs rather than when its upload fails.
			if err := persistence.CheckAssetName(s.Name); err != nil {
				errs = append(errs, fmt.Errorf("name %w", err))
			}
		}
	case messages.OpEval:
		need(s.Expression != "", "expression")
	case "":
		errs = append(errs, errors.New("op is required"))
	default:
		errs = append(errs, fmt.Errorf("unknown op %q (want navigate, click, type, wait, screenshot, text or eval)", s.Op))
	}
	if s.TimeoutMS < 0 || time.Duration(s.TimeoutMS)*time.Millisecond > maxStepTimeout {
		errs = append(errs, fmt.Errorf("timeout_ms %d out of range 1..%d", s.TimeoutMS, maxStepTimeout.Milliseconds()))
	}
	return errors.Join(errs...)
}

// describe names the step in log lines and errors: "click #missing".
func (s step) describe() string {
	switch s.Op {
	case messages.OpNavigate:
		return "navigate " + s.URL
	case messages.OpWait:
		if s.Selector == "" {
			return fmt.Sprintf("wait %dms", s.MS)
		}
		return "wait " + s.Selector
	case messages.OpScreenshot:
		if s.Selector != "" {
			return "screenshot " + s.Selector
		}
		return "screenshot"
	case messages.OpEval:
		e := strings.Join(strings.Fields(s.Expression), " ")
		if len(e) > 40 {
			e = strings.ToValidUTF8(e[:40], "") + "…"
		}
		return "eval " + e
	default:
		return s.Op + " " + s.Selector
	}
}

// timeout is the step's time budget.
func (s step) timeout(def time.Duration) time.Duration {
	if s.TimeoutMS > 0 {
		return time.Duration(s.TimeoutMS) * time.Millisecond
	}
	return def
}

// checkURL refuses URLs a job may not open.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url %q: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if !allowedSchemes[scheme] {
		return fmt.Errorf("url %q: scheme %q not allowed (http, https, about:blank, data)", raw, u.Scheme)
	}
	if scheme == "about" && !strings.EqualFold(u.Opaque, "blank") {
		// Chromium maps about:version and the like to chrome:// pages.
		return fmt.Errorf("url %q: of the about: URLs only about:blank is allowed", raw)
	}
	return nil
}

// stepOutput is what a step produced: its result object, and for a
// screenshot the PNG, which the caller stores (macro) or inlines (session).
type stepOutput struct {
	result map[string]any
	png    []byte
}

// navResult is what a navigation reports.
type navResult struct {
	Status int64
	URL    string
	Title  string
}

// stepTimeoutError is the cause of a step's context when its budget ran out.
type stepTimeoutError struct {
	d    time.Duration
	what string
}

func (e *stepTimeoutError) Error() string {
	return fmt.Sprintf("timed out after %s %s", e.d, e.what)
}

// runStep runs one step on the tab. ctx is the job's (or the session
// command's) context; the step gets its own budget within it.
func (t *tab) runStep(ctx context.Context, s step, stepTimeout time.Duration) (stepOutput, error) {
	rctx, done := t.bind(ctx)
	defer done()
	if s.Op == messages.OpWait && s.Selector == "" {
		err := backoff.Sleep(rctx, time.Duration(s.MS)*time.Millisecond)
		return stepOutput{result: map[string]any{}}, t.failure(rctx, err)
	}
	d := s.timeout(stepTimeout)
	what := "waiting for " + s.Selector
	if s.Op == messages.OpNavigate {
		what = "loading the page"
	} else if s.Selector == "" {
		what = "waiting for the page"
	}
	sctx, cancel := context.WithTimeoutCause(rctx, d, &stepTimeoutError{d: d, what: what})
	defer cancel()

	out, err := t.do(sctx, s)
	if err != nil {
		return stepOutput{}, t.failure(sctx, err)
	}
	return out, nil
}

// do performs the step's op.
func (t *tab) do(ctx context.Context, s step) (stepOutput, error) {
	res := map[string]any{}
	sel := chromedp.CSS(s.Selector)
	switch s.Op {
	case messages.OpNavigate:
		nav, err := t.navigate(ctx, s.URL)
		if err != nil {
			return stepOutput{}, err
		}
		res["status"], res["url"], res["title"] = nav.Status, nav.URL, nav.Title
		if !s.AnyStatus && !okStatus(nav.Status) {
			return stepOutput{result: res}, fmt.Errorf("http status %d", nav.Status)
		}
	case messages.OpClick:
		if err := chromedp.Do(ctx, chromedp.Click(sel)); err != nil {
			return stepOutput{}, err
		}
	case messages.OpType:
		var actions []chromedp.Action[chromedp.Void]
		if s.Clear {
			actions = append(actions, chromedp.Clear(sel))
		}
		actions = append(actions, chromedp.SendKeys(sel, *s.Text))
		if err := chromedp.Do(ctx, actions...); err != nil {
			return stepOutput{}, err
		}
	case messages.OpWait:
		var err error
		switch {
		case s.Gone:
			err = chromedp.Do(ctx, chromedp.WaitNotPresent(sel))
		case s.Visible:
			err = chromedp.Do(ctx, chromedp.WaitVisible(sel))
		default:
			err = chromedp.Do(ctx, chromedp.WaitReady(sel))
		}
		if err != nil {
			return stepOutput{}, err
		}
	case messages.OpScreenshot:
		var png []byte
		var err error
		if s.Selector != "" {
			png, err = chromedp.Run(ctx, chromedp.Screenshot(sel))
		} else {
			png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		}
		if err != nil {
			return stepOutput{}, err
		}
		res["bytes"] = len(png)
		return stepOutput{result: res, png: png}, nil
	case messages.OpText:
		text, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			return stepOutput{}, err
		}
		if len(text) > maxTextBytes {
			text = strings.ToValidUTF8(text[:maxTextBytes], "")
			res["truncated"] = true
		}
		res["text"] = text
	case messages.OpEval:
		v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](s.Expression, chromedp.EvalAwaitPromise))
		if err != nil {
			return stepOutput{}, err
		}
		if len(v) > maxEvalBytes {
			return stepOutput{}, fmt.Errorf("result of %d bytes exceeds the limit of %d", len(v), maxEvalBytes)
		}
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		res["value"] = v
	default:
		return stepOutput{}, fmt.Errorf("unknown op %q", s.Op)
	}
	return stepOutput{result: res}, nil
}

// navigate loads u and reports the main document's status, the final URL
// (after redirects) and the title.
func (t *tab) navigate(ctx context.Context, u string) (navResult, error) {
	// Checked here as well as in the egress guard: the job fails at once
	// with the policy's reason rather than with Chromium's
	// ERR_BLOCKED_BY_CLIENT.
	if err := t.egressSeen.check(ctx, t.l.d.egress, u); err != nil {
		return navResult{}, &agent.JobError{Reason: agent.ReasonJobError, Err: err}
	}
	t.docBlocked.Store(nil)
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(u))
	if err != nil {
		if ee := t.docBlocked.Load(); ee != nil {
			// A redirect to a denied host.
			return navResult{}, &agent.JobError{Reason: agent.ReasonJobError, Err: ee}
		}
		return navResult{}, err
	}
	var nav navResult
	if resp != nil {
		nav.Status = resp.Status
	}
	if nav.URL, err = chromedp.Run(ctx, chromedp.Location()); err != nil {
		return nav, err
	}
	if nav.Title, err = chromedp.Run(ctx, chromedp.Title()); err != nil {
		return nav, err
	}
	return nav, nil
}

// okStatus reports a 2xx status; 0 means no HTTP response (about:, data:).
func okStatus(s int64) bool { return s == 0 || (s >= 200 && s <= 299) }
