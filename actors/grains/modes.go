package grains

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// The one answer to "which workers can run a job of this mode": a worker
// that declared its modes in hello runs exactly those (the ones whose lane
// need its drivers meet); one that declared none runs the built-in modes
// its drivers allow (messages.ModeDriver). pick_worker's filter
// (PickRule.Eligible), the scheduler's count of served modes, waiting_for,
// require_capacity and GET /modes all read it from here.

// MaxWorkerSchemaBytes bounds the schemas one worker declares, together.
// Each is at most messages.MaxModeSchemaBytes; the worker's registry
// record, which carries them so every hub can check params, is written on
// every heartbeat and placement, so the sum is bounded too. A hello over
// it is refused.
const MaxWorkerSchemaBytes = 64 << 10

// isBuiltinMode: one of messages.Modes ("" is noop, as stored by hubs
// before modes were checked).
func isBuiltinMode(mode string) bool {
	return mode == "" || slices.Contains(messages.Modes, mode)
}

// runsMode reports whether a worker runs mode: declares says whether it
// declared modes, declared holds them (by name), drivers are its drivers.
// Split in two small functions so that pick_worker's loop over 1,000
// candidates inlines them.
func runsMode(declares bool, declared map[string]struct{}, drivers []string, mode string) bool {
	if declares {
		return declaresMode(declared, mode)
	}
	return runsBuiltin(drivers, mode)
}

// declaresMode: mode is among a declaring worker's modes ("" is noop).
func declaresMode(declared map[string]struct{}, mode string) bool {
	if mode == "" {
		mode = messages.ModeNoop
	}
	_, ok := declared[mode]
	return ok
}

// runsBuiltin: a worker that declares nothing runs mode (a built-in mode
// its drivers allow).
func runsBuiltin(drivers []string, mode string) bool {
	d := messages.ModeDriver(mode)
	return d == "" || hasDriverFor(drivers, mode, d)
}

// hasDriverFor: mode is a built-in browser mode and drivers hold d, the
// driver it needs.
func hasDriverFor(drivers []string, mode, d string) bool {
	return isBuiltinMode(mode) && slices.Contains(drivers, d)
}

// laneMet: a declared mode's lane need is met by the worker's drivers.
func laneMet(lane string, drivers []string) bool {
	return lane == messages.LaneNeedNone || slices.Contains(drivers, lane)
}

// declaredModes turns hello's declared modes into the registry's, after
// the bound on their schemas together.
func declaredModes(decls []messages.ModeDecl) ([]persistence.WorkerMode, error) {
	if len(decls) == 0 {
		return nil, nil
	}
	total := 0
	out := make([]persistence.WorkerMode, len(decls))
	for i, d := range decls {
		total += len(d.Schema)
		schema := d.Schema
		if len(schema) > 0 {
			var buf bytes.Buffer
			if err := json.Compact(&buf, schema); err != nil {
				return nil, fmt.Errorf("capabilities.modes[%d].schema: %w", i, err)
			}
			schema = buf.Bytes()
		}
		out[i] = persistence.WorkerMode{Name: d.Name, Lane: d.Lane, Schema: schema}
	}
	if total > MaxWorkerSchemaBytes {
		return nil, fmt.Errorf("capabilities.modes: the schemas have %d bytes together, limit %d", total, MaxWorkerSchemaBytes)
	}
	return out, nil
}

// runnableModes is the names of the declared modes the worker can run
// (their lane need met), for the scheduler.
func runnableModes(modes []persistence.WorkerMode, drivers []string) []string {
	out := make([]string, 0, len(modes))
	for _, m := range modes {
		if laneMet(m.Lane, drivers) {
			out = append(out, m.Name)
		}
	}
	return out
}

// modeSet indexes mode names for Candidate.Modes.
func modeSet(names []string) map[string]struct{} {
	if len(names) == 0 {
		return nil
	}
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	return set
}

// servedModes is every mode c could run while it is capable (alive or
// not: the scheduler's count of served modes is a shortcut, pick_worker
// still checks each candidate); nil when it could run nothing.
func servedModes(c *Candidate) []string {
	if !c.Connected || c.Status != WorkerActive || c.MaxConcurrent <= 0 || (c.Lanes < 1 && !c.HasBrowser) {
		return nil
	}
	if c.Declares {
		out := make([]string, 0, len(c.Modes))
		for m := range c.Modes {
			out = append(out, m)
		}
		slices.Sort(out) // compared with the last share (countServed)
		return out
	}
	out := make([]string, 0, len(messages.Modes))
	for _, m := range messages.Modes {
		if runsMode(false, nil, c.Drivers, m) {
			out = append(out, m)
		}
	}
	return out
}

// fleetModes is what the alive, active workers of a registry read run:
// each mode with its lane need, schemas and how many workers and slots
// serve it, by name.
func fleetModes(ws []persistence.WorkerInfo, aliveWindow time.Duration, now time.Time) []persistence.ModeInfo {
	type acc struct {
		info    persistence.ModeInfo
		schemas map[string]int // compact schema → workers declaring it
	}
	modes := map[string]*acc{}
	add := func(name, lane string, schema json.RawMessage, declared bool, slots int) {
		a := modes[name]
		if a == nil {
			a = &acc{info: persistence.ModeInfo{Name: name, Lane: lane}, schemas: map[string]int{}}
			modes[name] = a
		}
		if lane == messages.LaneNeedChromium {
			a.info.Lane = lane
		}
		a.info.Workers++
		a.info.Lanes += slots
		switch {
		case len(schema) > 0:
			a.schemas[string(schema)]++
		case declared && !isBuiltinMode(name):
			a.info.Unchecked = true
		}
	}
	for _, w := range ws {
		if !capable(w, aliveWindow, now) {
			continue
		}
		if len(w.Modes) > 0 {
			for _, m := range w.Modes {
				if laneMet(m.Lane, w.Drivers) {
					add(m.Name, m.Lane, m.Schema, true, w.MaxConcurrent)
				}
			}
			continue
		}
		for _, m := range messages.Modes {
			if runsMode(false, nil, w.Drivers, m) {
				add(m, messages.ModeDriver(m), nil, false, w.MaxConcurrent)
			}
		}
	}
	out := make([]persistence.ModeInfo, 0, len(modes))
	for _, a := range modes {
		type sc struct {
			schema string
			n      int
		}
		var ss []sc
		for s, n := range a.schemas {
			ss = append(ss, sc{s, n})
		}
		// The schema most workers declare first; equals by text, so every
		// hub shows the same one.
		slices.SortFunc(ss, func(x, y sc) int {
			if x.n != y.n {
				return cmp.Compare(y.n, x.n)
			}
			return cmp.Compare(x.schema, y.schema)
		})
		if len(ss) > 0 {
			a.info.Schema = json.RawMessage(ss[0].schema)
		}
		if len(ss) > 1 {
			for _, s := range ss {
				a.info.Schemas = append(a.info.Schemas, json.RawMessage(s.schema))
			}
		}
		out = append(out, a.info)
	}
	slices.SortFunc(out, func(a, b persistence.ModeInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// sameModes: set holds exactly names (names has no repeats: hello's
// declarations are unique).
func sameModes(set map[string]struct{}, names []string) bool {
	if len(set) != len(names) {
		return false
	}
	for _, n := range names {
		if _, ok := set[n]; !ok {
			return false
		}
	}
	return true
}

// MetricModeCustom is the mode label of every custom mode's series.
const MetricModeCustom = "custom"

// metricMode is mode as a metric label: a built-in mode names itself,
// every custom mode is "custom". Modes are the clients' words, and one
// series per word a client makes up would grow the scrape without bound.
func metricMode(mode string) string {
	switch {
	case mode == "":
		return messages.ModeNoop
	case isBuiltinMode(mode):
		return mode
	}
	return MetricModeCustom
}
