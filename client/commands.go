package client

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Session command ops (API.md, POST /sessions/{id}/commands; the same
// steps as a macro's). Their home is messages.StepOps, spelled here for the
// reason the modes are (see ModeNoop); TestOpsAreTheWireContracts keeps the
// two equal.
const (
	OpNavigate   = "navigate"
	OpClick      = "click"
	OpType       = "type"
	OpWait       = "wait"
	OpScreenshot = "screenshot"
	OpText       = "text"
	OpEval       = "eval"
)

// Cmd is one session command. The constructors (Navigate, Click, ...) set
// Op and the fields it needs; set the optional ones on the value they
// return.
type Cmd struct {
	// Op is one of the Op constants.
	Op string `json:"op"`
	// URL is navigate's address.
	URL string `json:"url,omitempty"`
	// Selector is the CSS selector of click, type, wait and text, and of
	// screenshot's element (none: the viewport).
	Selector string `json:"selector,omitempty"`
	// Text is what type types; a pointer, so "" can be typed.
	Text *string `json:"text,omitempty"`
	// Expression is eval's JavaScript; a promise is awaited.
	Expression string `json:"expression,omitempty"`
	// MS is how long a wait without a selector pauses.
	MS int64 `json:"ms,omitempty"`
	// Visible makes wait wait until the element is visible, not only
	// present.
	Visible bool `json:"visible,omitempty"`
	// Gone makes wait wait until no element matches.
	Gone bool `json:"gone,omitempty"`
	// Clear makes type clear the field first.
	Clear bool `json:"clear,omitempty"`
	// AnyStatus makes navigate accept a non-2xx answer.
	AnyStatus bool `json:"any_status,omitempty"`
	// TimeoutMS bounds the command instead of the worker's step timeout.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// WithTimeout returns c bounded by d (timeout_ms, whole milliseconds, at
// least 1).
func (c Cmd) WithTimeout(d time.Duration) Cmd {
	c.TimeoutMS = max(d.Milliseconds(), 1)
	return c
}

// Navigate loads url; its result decodes with CommandResult.Navigate.
func Navigate(url string) Cmd { return Cmd{Op: OpNavigate, URL: url} }

// Click clicks the first element matching selector.
func Click(selector string) Cmd { return Cmd{Op: OpClick, Selector: selector} }

// Type types text into the element matching selector.
func Type(selector, text string) Cmd { return Cmd{Op: OpType, Selector: selector, Text: &text} }

// WaitFor waits until an element matches selector (set Visible or Gone
// for the other conditions).
func WaitFor(selector string) Cmd { return Cmd{Op: OpWait, Selector: selector} }

// Sleep pauses the session's page for d (a wait without a selector).
func Sleep(d time.Duration) Cmd { return Cmd{Op: OpWait, MS: max(d.Milliseconds(), 1)} }

// Screenshot captures the viewport, or the element matching selector when
// it is not ""; the PNG decodes with CommandResult.Screenshot.
func Screenshot(selector string) Cmd { return Cmd{Op: OpScreenshot, Selector: selector} }

// Text reads the text of the element matching selector; it decodes with
// CommandResult.Text.
func Text(selector string) Cmd { return Cmd{Op: OpText, Selector: selector} }

// Eval evaluates a JavaScript expression in the page; its value decodes
// with CommandResult.Eval.
func Eval(expression string) Cmd { return Cmd{Op: OpEval, Expression: expression} }

// CommandResult is the result of a session command as the hub answered
// it (JSON; "null" for ops without one). Its methods decode it per op.
type CommandResult json.RawMessage

// String is the result's JSON text.
func (r CommandResult) String() string { return string(r) }

// NavigateResult is what navigate answers.
type NavigateResult struct {
	// Status is the HTTP status of the main document.
	Status int `json:"status"`
	// URL is the final address, after redirects.
	URL string `json:"url"`
	// Title is the page's title.
	Title string `json:"title"`
}

// Navigate decodes a navigate result.
func (r CommandResult) Navigate() (NavigateResult, error) {
	var n NavigateResult
	err := r.decode(OpNavigate, &n)
	return n, err
}

// Text decodes a text result; truncated reports that the worker cut a
// very long text.
func (r CommandResult) Text() (text string, truncated bool, err error) {
	var t struct {
		Text      *string `json:"text"`
		Truncated bool    `json:"truncated"`
	}
	if err := r.decode(OpText, &t); err != nil {
		return "", false, err
	}
	if t.Text == nil {
		return "", false, errors.New("text result: no text field")
	}
	return *t.Text, t.Truncated, nil
}

// Screenshot decodes a screenshot result into the PNG's bytes.
func (r CommandResult) Screenshot() ([]byte, error) {
	var s struct {
		PNG *string `json:"png_base64"`
	}
	if err := r.decode(OpScreenshot, &s); err != nil {
		return nil, err
	}
	if s.PNG == nil {
		return nil, errors.New("screenshot result: no png_base64 field")
	}
	png, err := base64.StdEncoding.DecodeString(*s.PNG)
	if err != nil {
		return nil, fmt.Errorf("screenshot result: %w", err)
	}
	return png, nil
}

// Eval decodes an eval result's value into v (as json.Unmarshal does).
func (r CommandResult) Eval(v any) error {
	var e struct {
		Value json.RawMessage `json:"value"`
	}
	if err := r.decode(OpEval, &e); err != nil {
		return err
	}
	if len(e.Value) == 0 {
		return errors.New("eval result: no value field")
	}
	if err := json.Unmarshal(e.Value, v); err != nil {
		return fmt.Errorf("eval result: %w", err)
	}
	return nil
}

func (r CommandResult) decode(op string, v any) error {
	if err := json.Unmarshal(r, v); err != nil {
		return fmt.Errorf("%s result: %w", op, err)
	}
	return nil
}
