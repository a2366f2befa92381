package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/paprika-hub/paprika/messages"
)

// NoopParams are the parameters of mode noop (API.md, "Job modes").
type NoopParams struct {
	Lines      int  `json:"lines"`
	IntervalMS int  `json:"interval_ms"`
	SleepMS    int  `json:"sleep_ms"`
	Fail       bool `json:"fail"`
}

// FetchParams are the parameters of mode fetch; the browser options are
// fields of their own beside url.
type FetchParams struct {
	URL        string `json:"url"`
	WaitFor    string `json:"wait_for"`
	Screenshot *bool  `json:"screenshot"`
	messages.BrowserOptions
	// PDF also stores the page printed as page.pdf.
	PDF bool `json:"pdf"`
	// FullPage makes screenshot.png cover the whole page, not just the
	// viewport (its height capped by the worker).
	FullPage bool `json:"full_page"`
}

// MacroParams are the parameters of mode macro, with the browser options.
type MacroParams struct {
	Steps []map[string]any `json:"steps"`
	messages.BrowserOptions
}

// Bounds of noop parameters: enough for load tests, not enough to wedge a lane.
const (
	maxNoopLines = 1_000_000
	maxNoopMS    = 24 * 3600 * 1000
)

// ValidateParams checks a job's params against its mode, with a 400 naming
// the field at fault.
func ValidateParams(mode string, raw json.RawMessage) error {
	bad := func(format string, args ...any) error {
		return Errorf(http.StatusBadRequest, "bad_params", format, args...)
	}
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return bad("params.%s must be a %s, not a JSON %s", te.Field, te.Type, te.Value)
			}
			return bad("params of mode %s: %v", mode, err)
		}
		return nil
	}
	switch mode {
	case messages.ModeNoop:
		if string(raw) == "{}" {
			return nil // the zero NoopParams, in range: most no-op jobs
		}
		var p NoopParams
		if err := strict(&p); err != nil {
			return err
		}
		if p.Lines < 0 || p.Lines > maxNoopLines {
			return bad("params.lines %d is out of range 0..%d", p.Lines, maxNoopLines)
		}
		if p.IntervalMS < 0 || p.IntervalMS > maxNoopMS || p.SleepMS < 0 || p.SleepMS > maxNoopMS {
			return bad("params.interval_ms and params.sleep_ms must be in 0..%d", maxNoopMS)
		}
	case messages.ModeFetch:
		var p FetchParams
		if err := strict(&p); err != nil {
			return err
		}
		u, err := url.Parse(p.URL)
		if p.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("params.url %q must be an absolute http(s) URL", p.URL)
		}
		if err := checkOptions(p.BrowserOptions, "params."); err != nil {
			return err
		}
	case messages.ModeMacro:
		var p MacroParams
		if err := strict(&p); err != nil {
			return err
		}
		if len(p.Steps) == 0 {
			return bad("params.steps must be a non-empty list")
		}
		for i, st := range p.Steps {
			op, _ := st["op"].(string)
			if !messages.IsStepOp(op) {
				return bad("params.steps[%d].op %q is not one of %s", i, op, strings.Join(messages.StepOps, ", "))
			}
		}
		if err := checkOptions(p.BrowserOptions, "params."); err != nil {
			return err
		}
	case "":
		return Errorf(http.StatusBadRequest, "bad_mode", "mode is required: noop, fetch or macro")
	default:
		return Errorf(http.StatusBadRequest, "bad_mode", "mode %q is not one of %s", mode, strings.Join(messages.Modes, ", "))
	}
	return nil
}

// checkOptions validates browser options: a 400 bad_option whose message
// and "field" name the option at fault (prefix + its path, e.g.
// "params.viewport.width").
func checkOptions(o messages.BrowserOptions, prefix string) error {
	err := o.Validate()
	if err == nil {
		return nil
	}
	var oe *messages.OptionError
	if !errors.As(err, &oe) {
		return Errorf(http.StatusBadRequest, "bad_option", "%v", err)
	}
	e := Errorf(http.StatusBadRequest, "bad_option", "%s%s: %s", prefix, oe.Field, oe.Msg)
	e.Extra = map[string]any{"field": prefix + oe.Field}
	return e
}
