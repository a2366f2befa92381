// Package jsonenc appends JSON values by hand for the few encodings on a
// per-job path (a link's ack frame, a job's attempts log), writing what
// encoding/json writes without its reflection.
package jsonenc

import (
	"encoding/json"
	"time"
	"unicode/utf8"
)

// AppendString appends s as encoding/json writes it: as it is, quoted,
// when every byte is printable ASCII that needs no escape (ids, lanes,
// statuses), else through encoding/json itself.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendTime appends t as time.Time's MarshalJSON writes it, and fails
// where it does (a year outside 0–9999).
func AppendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		q, err := t.MarshalJSON()
		return append(b, q...), err
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}
