package live

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

func TestCheckInput(t *testing.T) {
	for _, c := range []struct {
		kind, event, want string // want "" = refused
	}{
		{messages.LiveInputMouse, `{"type":"mousePressed","x":10,"y":20.5,"button":"left","clickCount":1}`,
			`{"type":"mousePressed","x":10,"y":20.5,"button":"left","clickCount":1}`},
		{messages.LiveInputMouse, `{"type":"mouseWheel","x":1,"y":1,"deltaY":-120}`, `{"type":"mouseWheel","x":1,"y":1,"deltaY":-120}`},
		{messages.LiveInputMouse, `{"type":"mousePressed","x":-1,"y":0}`, ""},
		{messages.LiveInputMouse, `{"type":"mousePressed","x":1,"y":99999}`, ""},
		{messages.LiveInputMouse, `{"type":"dragIntercepted","x":1,"y":1}`, ""},
		{messages.LiveInputMouse, `{"type":"mouseMoved","x":1,"y":1,"button":"thumb"}`, ""},
		{messages.LiveInputMouse, `{"type":"mouseMoved","x":1,"y":1,"clickCount":9}`, ""},
		{messages.LiveInputMouse, `{"type":"mouseMoved","x":1,"y":1,"pointerType":"pen"}`, ""}, // unknown field
		{messages.LiveInputMouse, `{"type":"mouseMoved","x":"1","y":1}`, ""},
		{messages.LiveInputMouse, ``, ""},
		{messages.LiveInputKey, `{"type":"keyDown","key":"a","text":"a","code":"KeyA","windowsVirtualKeyCode":65}`,
			`{"type":"keyDown","text":"a","key":"a","code":"KeyA","windowsVirtualKeyCode":65}`},
		{messages.LiveInputKey, `{"type":"char","text":"` + string(make([]byte, 40)) + `"}`, ""},
		{messages.LiveInputKey, `{"type":"keyPress"}`, ""},
		{messages.LiveInputKey, `{"type":"keyDown","windowsVirtualKeyCode":999}`, ""},
		{messages.LiveInputKey, `{"type":"keyDown","commands":["selectAll"]}`, ""},
		{"touch", `{"type":"touchStart"}`, ""},
	} {
		got, err := CheckInput(c.kind, json.RawMessage(c.event))
		if c.want == "" {
			require.Error(t, err, c.event)
			continue
		}
		require.NoError(t, err, c.event)
		require.JSONEq(t, c.want, string(got))
	}
}

func TestRateLimit(t *testing.T) {
	now := time.Unix(0, 0)
	r := newRateLimit(10, 5, func() time.Time { return now })
	n := 0
	for range 20 {
		if r.allow() {
			n++
		}
	}
	require.Equal(t, 5, n, "the burst")
	now = now.Add(time.Second)
	n = 0
	for range 20 {
		if r.allow() {
			n++
		}
	}
	require.Equal(t, 5, n, "refilled at the rate, up to the burst")
	now = now.Add(200 * time.Millisecond)
	require.True(t, r.allow())
	require.True(t, r.allow())
	require.False(t, r.allow())
}

func TestCheckFrame(t *testing.T) {
	ok := workerFrame{Type: "frame", Data: "/9j/4AAQ", Width: 800, Height: 600}
	require.Empty(t, checkFrame(&ok))
	for _, f := range []workerFrame{
		{Type: "frames", Data: "/9j/4AAQ", Width: 1, Height: 1},
		{Type: "frame", Data: "/9j/4AAQ", Width: 0, Height: 1},
		{Type: "frame", Data: "/9j/4AAQ", Width: 1, Height: 99999},
		{Type: "frame", Data: "", Width: 1, Height: 1},
		{Type: "frame", Data: `ab"}`, Width: 1, Height: 1}, // would break the viewer's JSON
		{Type: "frame", Data: "abc", Width: 1, Height: 1},
		{Type: "frame", Data: "a=bc", Width: 1, Height: 1},
	} {
		require.NotEmpty(t, checkFrame(&f), "%+v", f)
	}
	var m map[string]any
	b := frameJSON(&messages.LiveFrame{Seq: 7, Data: []byte("/9j/4AAQ"), Width: 800, Height: 600})
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	require.Equal(t, map[string]any{"type": "frame", "seq": 7.0, "format": "jpeg", "data": "/9j/4AAQ", "width": 800.0, "height": 600.0}, m)
}
