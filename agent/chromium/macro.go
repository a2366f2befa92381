package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// Limits of the macro mode.
const (
	maxSteps = 1000
	// maxResultBytes keeps job_done below the link's 1 MiB frame limit.
	maxResultBytes = 900 << 10
)

// macroParams are the params of the macro mode.
type macroParams struct {
	Steps []json.RawMessage `json:"steps"`
	messages.BrowserOptions
}

// parseMacroParams decodes and checks every step (and the browser
// options) before any runs, so a typo in step 9 does not leave steps 1–8
// half done.
func parseMacroParams(raw json.RawMessage) ([]step, messages.BrowserOptions, error) {
	var p macroParams
	if err := decodeStrict(raw, &p); err != nil {
		return nil, p.BrowserOptions, fmt.Errorf("macro params: %w", err)
	}
	if err := p.BrowserOptions.Validate(); err != nil {
		return nil, p.BrowserOptions, fmt.Errorf("macro params: %w", err)
	}
	steps, err := parseSteps(p.Steps)
	return steps, p.BrowserOptions, err
}

// parseSteps checks each step of a macro.
func parseSteps(raws []json.RawMessage) ([]step, error) {
	p := macroParams{Steps: raws}
	if len(p.Steps) == 0 {
		return nil, errors.New("macro params: steps is required (a list of {\"op\": ...})")
	}
	if len(p.Steps) > maxSteps {
		return nil, fmt.Errorf("macro params: %d steps, at most %d", len(p.Steps), maxSteps)
	}
	steps := make([]step, len(p.Steps))
	for i, raw := range p.Steps {
		s, err := parseStep(raw)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		steps[i] = s
	}
	return steps, nil
}

// runMacro runs the steps in order; the first failing step fails the job.
// Result: {"steps": [each step's result]}; a screenshot step stores its PNG
// as an asset named by the step's name, default step-<i>.png (1-based).
func (d *Driver) runMacro(ctx context.Context, t *tab, job agent.Job, steps []step, log func(string)) (agent.Result, error) {
	results := make([]map[string]any, 0, len(steps))
	var assets []string
	for i, s := range steps {
		n := i + 1
		what := fmt.Sprintf("step %d (%s)", n, s.describe())
		log(fmt.Sprintf("step %d/%d %s", n, len(steps), s.describe()))
		start := time.Now()
		out, err := t.runStep(ctx, s, d.cfg.StepTimeout)
		if err != nil {
			return agent.Result{}, failure(err, what)
		}
		took := time.Since(start).Round(time.Millisecond)
		switch {
		case s.Op == messages.OpNavigate:
			log(fmt.Sprintf("step %d/%d status %v in %s", n, len(steps), out.result["status"], took))
		case out.png != nil:
			name := s.Name
			if name == "" {
				name = fmt.Sprintf("step-%d.png", n)
			}
			stored, err := d.store(ctx, job.ID, name, typePNG, out.png)
			if err != nil {
				return agent.Result{}, failure(err, what)
			}
			if stored {
				out.result["asset"] = name
				if !slices.Contains(assets, name) {
					assets = append(assets, name)
				}
			}
			log(fmt.Sprintf("step %d/%d screenshot %d bytes%s", n, len(steps), len(out.png), storedNote(stored)))
		default:
			log(fmt.Sprintf("step %d/%d done in %s", n, len(steps), took))
		}
		results = append(results, out.result)
	}
	b, err := json.Marshal(map[string]any{"steps": results})
	if err != nil {
		return agent.Result{}, fmt.Errorf("encode macro result: %w", err)
	}
	if len(b) > maxResultBytes {
		return agent.Result{}, agent.Fail(agent.ReasonJobError, "macro result of %d bytes exceeds the limit of %d", len(b), maxResultBytes)
	}
	return agent.Result{JSON: b, Assets: assets}, nil
}
