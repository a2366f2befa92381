package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// recordV1 starts a job record in the binary layout below. A record
// written before it is the job's JSON and starts with '{', so both are
// read; every write stores the binary one.
//
// Whole-job JSON on every transition was a third of the hub's CPU under
// load (encode, decode and the garbage of both). The binary record costs a
// few hundred nanoseconds each way and decodes every string of the job
// with one allocation: the string fields come first, in one section that
// is converted to a string once and sliced, and the JSON bodies (params,
// result) last, each copied out on its own.
//
//	0x01
//	uvarint len(head) ‖ head
//	  head = str ID, Mode, Status, Reason, Error, WorkerID, Lane, Tenant,
//	         IdempotencyKey;
//	         uvarint n ‖ n × (str asset);
//	         uvarint n ‖ n × (str key, str value)           (labels)
//	         uvarint n ‖ n × (str worker, lane, hub, status, reason, error)
//	                                                        (attempts log)
//	varint Attempts, MaxAttempts, Priority, TimeoutS
//	time RunAt, CreatedAt, StartedAt, FinishedAt
//	n × (varint attempt, time queued, started, finished)  (attempts log)
//	byte 0 | 1 ‖ float64 BaseS ‖ float64 MaxS            (retry backoff)
//	bytes Params, Result
//
// str and bytes are uvarint length ‖ bytes; time is varint Unix seconds
// ‖ uvarint nanoseconds, or the single varint of math.MinInt64 for the
// zero time (every stored time is UTC). WaitingFor is never stored.
const recordV1 byte = 0x01

// zeroTime marks the zero time.Time in a record.
const zeroTime = math.MinInt64

// encodeJob returns j's record.
func encodeJob(j *persistence.Job) []byte {
	n := 64 + len(j.ID) + len(j.Mode) + len(j.Status) + len(j.Reason) + len(j.Error) + len(j.WorkerID) +
		len(j.Lane) + len(j.Tenant) + len(j.IdempotencyKey) + len(j.Params) + len(j.Result)
	for _, a := range j.Assets {
		n += 2 + len(a)
	}
	for k, v := range j.Labels {
		n += 4 + len(k) + len(v)
	}
	for i := range j.AttemptsLog {
		a := &j.AttemptsLog[i]
		n += 48 + len(a.WorkerID) + len(a.Lane) + len(a.Hub) + len(a.Status) + len(a.Reason) + len(a.Error)
	}
	// The head is written in place after room for its length's uvarint,
	// then moved up to close the gap: one allocation per record.
	out := make([]byte, 1+binary.MaxVarintLen64, n+1+binary.MaxVarintLen64)
	out[0] = recordV1
	for _, s := range [...]string{j.ID, j.Mode, string(j.Status), j.Reason, j.Error, j.WorkerID, j.Lane, j.Tenant, j.IdempotencyKey} {
		out = appendStr(out, s)
	}
	out = binary.AppendUvarint(out, uint64(len(j.Assets)))
	for _, a := range j.Assets {
		out = appendStr(out, a)
	}
	out = binary.AppendUvarint(out, uint64(len(j.Labels)))
	for k, v := range j.Labels {
		out = appendStr(appendStr(out, k), v)
	}
	out = binary.AppendUvarint(out, uint64(len(j.AttemptsLog)))
	for i := range j.AttemptsLog {
		a := &j.AttemptsLog[i]
		for _, s := range [...]string{a.WorkerID, a.Lane, a.Hub, string(a.Status), a.Reason, a.Error} {
			out = appendStr(out, s)
		}
	}
	const at = 1 + binary.MaxVarintLen64
	k := binary.PutUvarint(out[1:], uint64(len(out)-at))
	out = out[:1+k+copy(out[1+k:], out[at:])]
	for _, v := range [...]int{j.Attempts, j.MaxAttempts, j.Priority, j.TimeoutS} {
		out = binary.AppendVarint(out, int64(v))
	}
	for _, t := range [...]time.Time{j.RunAt, j.CreatedAt, j.StartedAt, j.FinishedAt} {
		out = appendTime(out, t)
	}
	for i := range j.AttemptsLog {
		a := &j.AttemptsLog[i]
		out = binary.AppendVarint(out, int64(a.Attempt))
		out = appendTime(appendTime(appendTime(out, a.QueuedAt), a.StartedAt), a.FinishedAt)
	}
	if b := j.RetryBackoff; b != nil {
		out = append(out, 1)
		out = binary.BigEndian.AppendUint64(out, math.Float64bits(b.BaseS))
		out = binary.BigEndian.AppendUint64(out, math.Float64bits(b.MaxS))
	} else {
		out = append(out, 0)
	}
	params := j.Params
	if string(params) == "null" {
		params = nil // as the JSON record did: a literal null is no params
	}
	out = appendBytes(out, params)
	return appendBytes(out, j.Result)
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.AppendVarint(b, zeroTime)
	}
	return binary.AppendUvarint(binary.AppendVarint(b, t.Unix()), uint64(t.Nanosecond()))
}

// decodeJob decodes a record of either layout. The job shares no memory
// with data (bbolt's, valid only in its transaction).
func decodeJob(data []byte) (persistence.Job, error) {
	if len(data) > 0 && data[0] == recordV1 {
		return decodeV1(data[1:])
	}
	// A job stored before priorities existed has none: it gets the
	// default, as a submission without one does.
	j := persistence.Job{Priority: persistence.DefaultPriority}
	if err := json.Unmarshal(data, &j); err != nil {
		return persistence.Job{}, err
	}
	// json.RawMessage keeps a literal null; the job was stored without one.
	if string(j.Params) == "null" {
		j.Params = nil
	}
	return j, nil
}

var errTruncated = errors.New("truncated record")

// reader walks a record; the first error sticks and every later read
// returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 { return readVar(r, binary.Uvarint) }

func (r *reader) varint() int64 { return readVar(r, binary.Varint) }

// readVar reads one varint with dec (binary.Uvarint or Varint).
func readVar[T uint64 | int64](r *reader, dec func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := dec(r.b)
	if n <= 0 {
		r.err = errTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a length that must fit in what is left (each element takes
// at least one byte), so a corrupt record cannot ask for a huge allocation.
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = errTruncated
		return 0
	}
	return int(n)
}

func (r *reader) raw() []byte {
	n := r.count()
	if r.err != nil {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) time() time.Time {
	s := r.varint()
	if s == zeroTime || r.err != nil {
		return time.Time{}
	}
	ns := r.uvarint()
	if ns >= 1e9 {
		r.err = errTruncated
		return time.Time{}
	}
	return time.Unix(s, int64(ns)).UTC()
}

// strs slices strings out of one string (the record's head, converted
// once).
type strs struct {
	s   string
	off int
	err error
}

func (p *strs) uvarint() uint64 {
	if p.err != nil {
		return 0
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if p.off >= len(p.s) || shift > 63 {
			p.err = errTruncated
			return 0
		}
		c := p.s[p.off]
		p.off++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
}

func (p *strs) count() int {
	n := p.uvarint()
	if n > uint64(len(p.s)-p.off) {
		p.err = errTruncated
		return 0
	}
	return int(n)
}

func (p *strs) str() string {
	n := p.count()
	if p.err != nil {
		return ""
	}
	v := p.s[p.off : p.off+n]
	p.off += n
	return v
}

func decodeV1(data []byte) (persistence.Job, error) {
	r := reader{b: data}
	h := strs{s: string(r.raw())}
	if r.err != nil {
		return persistence.Job{}, fmt.Errorf("record head: %w", r.err)
	}
	var j persistence.Job
	j.ID, j.Mode, j.Status = h.str(), h.str(), persistence.Status(h.str())
	j.Reason, j.Error, j.WorkerID, j.Lane = h.str(), h.str(), h.str(), h.str()
	j.Tenant, j.IdempotencyKey = h.str(), h.str()
	if n := h.count(); n > 0 {
		j.Assets = make([]string, n)
		for i := range j.Assets {
			j.Assets[i] = h.str()
		}
	}
	if n := h.count(); n > 0 {
		j.Labels = make(map[string]string, n)
		for range n {
			k := h.str()
			j.Labels[k] = h.str()
		}
	}
	if n := h.count(); n > 0 {
		j.AttemptsLog = make([]persistence.Attempt, n)
		for i := range j.AttemptsLog {
			a := &j.AttemptsLog[i]
			a.WorkerID, a.Lane, a.Hub, a.Status = h.str(), h.str(), h.str(), persistence.Status(h.str())
			a.Reason, a.Error = h.str(), h.str()
		}
	}
	if h.err != nil {
		return persistence.Job{}, fmt.Errorf("record head: %w", h.err)
	}
	j.Attempts, j.MaxAttempts, j.Priority, j.TimeoutS = int(r.varint()), int(r.varint()), int(r.varint()), int(r.varint())
	j.RunAt, j.CreatedAt, j.StartedAt, j.FinishedAt = r.time(), r.time(), r.time(), r.time()
	for i := range j.AttemptsLog {
		a := &j.AttemptsLog[i]
		a.Attempt = int(r.varint())
		a.QueuedAt, a.StartedAt, a.FinishedAt = r.time(), r.time(), r.time()
	}
	if r.err == nil && len(r.b) > 0 {
		hasBackoff := r.b[0]
		r.b = r.b[1:]
		if hasBackoff == 1 {
			if len(r.b) < 16 {
				r.err = errTruncated
			} else {
				j.RetryBackoff = &persistence.RetryBackoff{
					BaseS: math.Float64frombits(binary.BigEndian.Uint64(r.b)),
					MaxS:  math.Float64frombits(binary.BigEndian.Uint64(r.b[8:])),
				}
				r.b = r.b[16:]
			}
		}
	} else if r.err == nil {
		r.err = errTruncated
	}
	params, result := r.raw(), r.raw()
	if r.err != nil {
		return persistence.Job{}, fmt.Errorf("record: %w", r.err)
	}
	// One allocation for both bodies; each capped, so appending to one
	// cannot overwrite the other.
	if len(params)+len(result) > 0 {
		buf := make([]byte, 0, len(params)+len(result))
		buf = append(append(buf, params...), result...)
		if len(params) > 0 {
			j.Params = buf[:len(params):len(params)]
		}
		if len(result) > 0 {
			j.Result = buf[len(params):]
		}
	}
	return j, nil
}
