package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// Bounds of a controlling viewer's input.
const (
	// InputRate is how many mouse and key events a viewer may send a
	// second (a mouse drag at 60 Hz fits); InputBurst the bucket's size.
	InputRate  = 60
	InputBurst = 120
	// maxCoord bounds x and y (CSS pixels) and wheel deltas.
	maxCoord = 20000
	// maxKeyText bounds text, unmodifiedText, key and code.
	maxKeyText = 32
)

var (
	mouseTypes   = []string{"mousePressed", "mouseReleased", "mouseMoved", "mouseWheel"}
	mouseButtons = []string{"none", "left", "middle", "right", "back", "forward"}
	keyTypes     = []string{"keyDown", "keyUp", "rawKeyDown", "char"}
)

// mouseEvent is what of Input.dispatchMouseEvent a viewer may send.
type mouseEvent struct {
	Type       string   `json:"type"`
	X          float64  `json:"x"`
	Y          float64  `json:"y"`
	Modifiers  int      `json:"modifiers,omitempty"`
	Button     string   `json:"button,omitempty"`
	Buttons    *int     `json:"buttons,omitempty"`
	ClickCount int      `json:"clickCount,omitempty"`
	DeltaX     *float64 `json:"deltaX,omitempty"`
	DeltaY     *float64 `json:"deltaY,omitempty"`
}

// keyEvent is what of Input.dispatchKeyEvent a viewer may send.
type keyEvent struct {
	Type                  string `json:"type"`
	Modifiers             int    `json:"modifiers,omitempty"`
	Text                  string `json:"text,omitempty"`
	UnmodifiedText        string `json:"unmodifiedText,omitempty"`
	Key                   string `json:"key,omitempty"`
	Code                  string `json:"code,omitempty"`
	WindowsVirtualKeyCode int    `json:"windowsVirtualKeyCode,omitempty"`
	NativeVirtualKeyCode  int    `json:"nativeVirtualKeyCode,omitempty"`
	AutoRepeat            bool   `json:"autoRepeat,omitempty"`
	IsKeypad              bool   `json:"isKeypad,omitempty"`
	Location              int    `json:"location,omitempty"`
}

// CheckInput validates a viewer's mouse or key event (kind
// messages.LiveInputMouse or LiveInputKey) and returns the CDP params the
// worker may dispatch: known fields only, types and ranges checked.
func CheckInput(kind string, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: event missing", kind)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	switch kind {
	case messages.LiveInputMouse:
		var e mouseEvent
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("mouse event: %w", err)
		}
		switch {
		case !slices.Contains(mouseTypes, e.Type):
			return nil, fmt.Errorf("mouse event: type %q is none of %v", e.Type, mouseTypes)
		case !inRange(e.X, 0, maxCoord) || !inRange(e.Y, 0, maxCoord):
			return nil, fmt.Errorf("mouse event: x and y must be within 0..%d", maxCoord)
		case e.Button != "" && !slices.Contains(mouseButtons, e.Button):
			return nil, fmt.Errorf("mouse event: button %q is none of %v", e.Button, mouseButtons)
		case e.ClickCount < 0 || e.ClickCount > 3:
			return nil, fmt.Errorf("mouse event: clickCount must be within 0..3")
		case e.Modifiers < 0 || e.Modifiers > 15:
			return nil, fmt.Errorf("mouse event: modifiers must be within 0..15")
		case e.Buttons != nil && (*e.Buttons < 0 || *e.Buttons > 31):
			return nil, fmt.Errorf("mouse event: buttons must be within 0..31")
		case e.DeltaX != nil && !inRange(*e.DeltaX, -maxCoord, maxCoord), e.DeltaY != nil && !inRange(*e.DeltaY, -maxCoord, maxCoord):
			return nil, fmt.Errorf("mouse event: deltaX and deltaY must be within ±%d", maxCoord)
		}
		return json.Marshal(e)
	case messages.LiveInputKey:
		var e keyEvent
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("key event: %w", err)
		}
		switch {
		case !slices.Contains(keyTypes, e.Type):
			return nil, fmt.Errorf("key event: type %q is none of %v", e.Type, keyTypes)
		case len(e.Text) > maxKeyText || len(e.UnmodifiedText) > maxKeyText || len(e.Key) > maxKeyText || len(e.Code) > maxKeyText:
			return nil, fmt.Errorf("key event: text, unmodifiedText, key and code are at most %d bytes", maxKeyText)
		case e.Modifiers < 0 || e.Modifiers > 15:
			return nil, fmt.Errorf("key event: modifiers must be within 0..15")
		case e.WindowsVirtualKeyCode < 0 || e.WindowsVirtualKeyCode > 255 || e.NativeVirtualKeyCode < 0 || e.NativeVirtualKeyCode > 65535:
			return nil, fmt.Errorf("key event: key codes out of range")
		case e.Location < 0 || e.Location > 3:
			return nil, fmt.Errorf("key event: location must be within 0..3")
		}
		return json.Marshal(e)
	}
	return nil, fmt.Errorf("unknown input %q", kind)
}

func inRange(v, lo, hi float64) bool { return !math.IsNaN(v) && v >= lo && v <= hi }

// rateLimit is a token bucket, confined to its actor.
type rateLimit struct {
	rate, burst float64
	tokens      float64
	at          time.Time
	now         func() time.Time
}

func newRateLimit(rate, burst int, now func() time.Time) *rateLimit {
	return &rateLimit{rate: float64(rate), burst: float64(burst), tokens: float64(burst), at: now(), now: now}
}

func (r *rateLimit) allow() bool {
	t := r.now()
	r.tokens = math.Min(r.burst, r.tokens+t.Sub(r.at).Seconds()*r.rate)
	r.at = t
	if r.tokens < 1 {
		return false
	}
	r.tokens--
	return true
}
