package mysql

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/paprika-hub/paprika/persistence"
)

// encodeAttemptsLog is the attempts_log column of log: NULL when empty,
// else the JSON encoding/json would write, byte for byte. Every end
// writes the column, and encoding/json's reflection over the attempts and
// their times was 1.3 % of a MariaDB hub's CPU flat out.
func encodeAttemptsLog(log []persistence.Attempt) (any, error) {
	if len(log) == 0 {
		return nil, nil
	}
	b := make([]byte, 0, 256*len(log))
	b = append(b, '[')
	for i := range log {
		a := &log[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"attempt":`...)
		b = strconv.AppendInt(b, int64(a.Attempt), 10)
		b = append(b, `,"worker_id":`...)
		b = appendJSONString(b, a.WorkerID)
		b = append(b, `,"lane":`...)
		b = appendJSONString(b, a.Lane)
		b = append(b, `,"hub":`...)
		b = appendJSONString(b, a.Hub)
		var err error
		for _, f := range [...]struct {
			key string
			t   time.Time
		}{{`,"queued_at":`, a.QueuedAt}, {`,"started_at":`, a.StartedAt}, {`,"finished_at":`, a.FinishedAt}} {
			b = append(b, f.key...)
			if b, err = appendJSONTime(b, f.t); err != nil {
				return nil, err
			}
		}
		b = append(b, `,"status":`...)
		b = appendJSONString(b, string(a.Status))
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, a.Reason)
		b = append(b, `,"error":`...)
		b = appendJSONString(b, a.Error)
		b = append(b, '}')
	}
	b = append(b, ']')
	return string(b), nil
}

// appendJSONString appends s as encoding/json writes it: as it is, quoted,
// when every byte is printable ASCII that needs no escape (the ids, lanes
// and statuses), else through encoding/json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONTime appends t as time.Time's MarshalJSON writes it, and fails
// where it does (a year outside 0–9999).
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		q, err := t.MarshalJSON()
		return append(b, q...), err
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}
