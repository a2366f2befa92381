package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/paprika-hub/paprika/client"
)

// modes is `paprika modes`: the modes the fleet's alive workers run now,
// as a table (NAME LANE WORKERS LANES SCHEMA), or GET /modes' answer with
// --json.
func (c *cli) modes(ctx context.Context, args []string) int {
	return listView(ctx, c, "modes", args, func(ctx context.Context, cl *client.Client) (modeList, error) {
		ms, err := cl.Modes(ctx)
		return modeList{ms}, err
	}, func(l modeList) { renderModes(c.stdout, l.Modes) })
}

// modeList is what --json prints for `paprika modes`: the hub's answer.
type modeList struct {
	Modes []client.Mode `json:"modes"`
}

// renderModes prints one line per mode; SCHEMA says whether params are
// checked: "yes" (one schema), "N schemas" (workers disagree: any passes),
// "no" (a worker declares it without one), "hub" (a built-in mode, the
// hub's own checks).
func renderModes(w io.Writer, ms []client.Mode) {
	t := newTable(w, "NAME", "LANE", "WORKERS", "LANES", "SCHEMA")
	for _, m := range ms {
		lane := m.Lane
		if lane == "" {
			lane = "any"
		}
		schema := "no"
		switch {
		case m.Name == client.ModeNoop || m.Name == client.ModeFetch || m.Name == client.ModeMacro:
			schema = "hub"
		case m.Unchecked:
		case len(m.Schemas) > 1:
			schema = strconv.Itoa(len(m.Schemas)) + " schemas"
		case len(m.Schema) > 0 && string(m.Schema) != "null":
			schema = "yes"
		}
		t.row(m.Name, lane, strconv.Itoa(m.Workers), strconv.Itoa(m.Lanes), schema)
	}
	t.flush()
}

// paramJSON is --param-json: a JSON object of job params; --param KEY=VALUE
// flags are applied over it, each replacing that key.
type paramJSON struct{ obj map[string]json.RawMessage }

// String implements flag.Value.
func (p *paramJSON) String() string {
	if p == nil || p.obj == nil {
		return ""
	}
	b, _ := json.Marshal(p.obj)
	return string(b)
}

// Set implements flag.Value: the value must be one JSON object.
func (p *paramJSON) Set(v string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &obj); err != nil || obj == nil {
		if err == nil {
			err = fmt.Errorf("null")
		}
		return fmt.Errorf("not a JSON object (%v); give the params as '{\"key\": value, ...}'", err)
	}
	p.obj = obj
	return nil
}

// merge is the params to send: --param-json's object with each --param
// over it; nil when neither was given.
func (p *paramJSON) merge(params map[string]any) map[string]any {
	if len(p.obj) == 0 {
		return params
	}
	out := make(map[string]any, len(p.obj)+len(params))
	for k, v := range p.obj {
		out[k] = v
	}
	for k, v := range params {
		out[k] = v
	}
	return out
}
