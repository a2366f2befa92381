package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// termSafe makes s safe to print on the operator's terminal. Job ids,
// errors, reasons, log lines, labels, worker ids and results come from the
// hub, and so from whoever submitted the job or ran it: a worker or client
// can put an escape sequence in a job's error or log that would otherwise
// retitle, clear or rewrite the terminal that shows it, or hide text. So
// every control character is shown as an escape instead of being sent:
//
//   - C0 controls (except \n and \t, which only move the cursor down or
//     right), ESC and DEL become \xNN; "\r\n" becomes "\n" (a lone \r could
//     overwrite the start of a line, a line ending cannot);
//   - C1 controls (U+0080–U+009F: some terminals take U+009B as CSI) and the
//     bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069,
//     which reorder what the operator reads) become \uNNNN;
//   - bytes that are not UTF-8 (a raw 0x9B is an 8-bit CSI) become \xNN.
//
// Printable Unicode is kept. The escapes are chosen so that --json output
// stays valid JSON of the same value: encoding/json never writes a raw C0
// control or invalid UTF-8, and \uNNNN is JSON's own escape.
func termSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// Dropped: the \n that follows ends the line.
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape is termSafe's fast path: most output is plain.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return needsEscapeSlow(s)
		}
	}
	return false
}

func needsEscapeSlow(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || unsafeRune(r) {
			return true
		}
	}
	return false
}

// unsafeRune reports the non-ASCII runes termSafe escapes: C1 controls and
// the bidirectional formatting characters.
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// safeWriter applies termSafe to everything written through it: the CLI's
// stdout and stderr, so no command (table, outcome line, error, log line)
// can forget it. Each Write is escaped on its own; the fmt calls and the
// tables write whole strings, so a rune is not split across two Writes.
type safeWriter struct{ w io.Writer }

// terminalSafe wraps w in a safeWriter, once.
func terminalSafe(w io.Writer) io.Writer {
	if _, ok := w.(safeWriter); ok || w == nil {
		return w
	}
	return safeWriter{w}
}

// Write escapes p and writes it; it reports len(p) on success, as the
// caller's bytes are all accounted for.
func (s safeWriter) Write(p []byte) (int, error) {
	safe := termSafe(string(p))
	if _, err := io.WriteString(s.w, safe); err != nil {
		return 0, err
	}
	return len(p), nil
}
