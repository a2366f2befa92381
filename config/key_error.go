package config

import "strings"

// KeyError is one problem with one configuration key. Load and Validate
// return every problem at once, joined with errors.Join; each line of the
// joined error is one KeyError, so callers may print err.Error() as is or
// pull the problems apart with errors.As on the joined error's Unwrap.
type KeyError struct {
	// Key is the YAML key path, e.g. "scheduler.disk_exclude_pct".
	Key string
	// Msg says what is wrong and what is allowed, e.g.
	// "140 is out of range 1..100".
	Msg string
	// Origin is where the bad value came from: "file PATH:LINE",
	// "env NAME", "flag", or "" for a default or a computed check.
	Origin string
}

// Error renders "PATH:LINE: key: msg" for values from a file,
// "key: msg (from env NAME)" for env values and "key: msg" otherwise.
func (e *KeyError) Error() string {
	var b strings.Builder
	if loc, ok := strings.CutPrefix(e.Origin, "file "); ok {
		b.WriteString(loc)
		b.WriteString(": ")
	}
	b.WriteString(e.Key)
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if name, ok := strings.CutPrefix(e.Origin, "env "); ok {
		b.WriteString(" (from env ")
		b.WriteString(name)
		b.WriteString(")")
	}
	return b.String()
}
