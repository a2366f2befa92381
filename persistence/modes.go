package persistence

import "encoding/json"

// WorkerMode is one job mode a worker declared in hello
// (messages.ModeDecl), kept in the worker's registry record so every hub
// places, validates and lists by it.
type WorkerMode struct {
	// Name is the mode as jobs name it.
	Name string `json:"name"`
	// Lane is what a job of the mode needs of its lane: "chromium", or ""
	// (a lane slot, no browser).
	Lane string `json:"lane,omitempty"`
	// Schema is the JSON Schema of the mode's params, if declared.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// ModeInfo is one mode the fleet's alive workers run now (GET /modes).
type ModeInfo struct {
	// Name is the mode.
	Name string `json:"name"`
	// Lane is what it needs of a lane: "chromium" or "" (any lane).
	Lane string `json:"lane"`
	// Schema is the JSON Schema its params are checked against: the one
	// most of its workers declare (null when none declares one, and for
	// the built-in modes, whose params the hub checks itself).
	Schema json.RawMessage `json:"schema"`
	// Schemas lists every distinct schema its workers declare, when they
	// declare more than one; params valid against any of them pass.
	Schemas []json.RawMessage `json:"schemas,omitempty"`
	// Unchecked: some worker declares the mode without a schema, so any
	// params (a JSON object) pass.
	Unchecked bool `json:"unchecked,omitempty"`
	// Workers counts the alive, active workers that run it.
	Workers int `json:"workers"`
	// Lanes counts their lanes (the slots placement gives them).
	Lanes int `json:"lanes"`
}
