package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/paprika-hub/paprika/persistence"
)

// Bounds of POST /jobs:batch. Each item is also held to every bound of
// POST /jobs (its own body at most maxBodyBytes, params, labels, queue).
const (
	// MaxBatchJobs is the most jobs one POST /jobs:batch may carry.
	MaxBatchJobs = 1000
	// MaxBatchBytes bounds the whole batch body.
	MaxBatchBytes = 8 << 20
)

// BatchItem is one answer of POST /jobs:batch, in the order of the
// request: Status is what POST /jobs would have answered for that job
// (201 created, 200 an idempotent repeat, 4xx/5xx refused), with the job
// or the error object of that answer.
type BatchItem struct {
	Status int             `json:"status"`
	Job    json.RawMessage `json:"job,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// BatchResponse is the body of a POST /jobs:batch answer.
type BatchResponse struct {
	Results []BatchItem `json:"results"`
}

// batchKeyField is the one field a batch item may carry beyond POST
// /jobs's body: its Idempotency-Key, since one header cannot name many.
const batchKeyField = "idempotency_key"

// submitBatch is POST /jobs:batch: a JSON array of POST /jobs bodies,
// each held to the very checks of POST /jobs and answered as it would be
// (prepareSubmit, answerSubmit), per item in order. 201 when every item was created,
// else 207 with each item's own status; the batch itself is refused (4xx,
// no job created) only when it is not an array of objects or is over its
// bounds.
func (s *Server) submitBatch(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBatchBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "the batch is over %d bytes", MaxBatchBytes))
			return
		}
		writeError(w, Errorf(http.StatusBadRequest, "bad_body", "read body: %v", err))
		return
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "bad_json", "the body is not a JSON array of jobs: %v", err))
		return
	}
	switch {
	case len(items) == 0:
		writeError(w, Errorf(http.StatusBadRequest, "empty_batch", "the batch holds no job"))
		return
	case len(items) > MaxBatchJobs:
		writeError(w, Errorf(http.StatusRequestEntityTooLarge, "batch_too_large", "the batch holds %d jobs, at most %d", len(items), MaxBatchJobs))
		return
	}
	out := BatchResponse{Results: make([]BatchItem, len(items))}
	// Every item is checked first, then the ones that passed are created
	// together, in their order: in one store write where the store can
	// (one commit for the batch instead of one per item), and without
	// waiting for other writes to share it — a batch is company enough.
	ctx := persistence.WithoutCommitWait(r.Context())
	subs := make([]submission, 0, len(items))
	at := make([]int, 0, len(items)) // subs[n] is item at[n]
	var before ahead
	for i, raw := range items {
		sub, err := s.prepareItem(ctx, raw, &before)
		if err != nil {
			out.Results[i] = errorItem(err)
			continue
		}
		before.add(sub.tenant)
		subs = append(subs, sub)
		at = append(at, i)
	}
	for n, c := range s.submitMany(ctx, subs) {
		if c.Err != nil {
			out.Results[at[n]] = errorItem(c.Err)
			continue
		}
		rec := newItemRecorder()
		s.answerSubmit(rec, &subs[n], c.Job, c.Created)
		out.Results[at[n]] = rec.item()
	}
	status := http.StatusMultiStatus
	if allCreated(out.Results) {
		status = http.StatusCreated
	}
	writeBatch(w, status, out)
}

// writeBatch writes out as writeJSON would, without reading every item's
// job or error again to check it: each is JSON this handler encoded.
func writeBatch(w http.ResponseWriter, status int, out BatchResponse) {
	n := 16
	for _, it := range out.Results {
		n += 32 + len(it.Job) + len(it.Error)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"results":[`...)
	for i, it := range out.Results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"status":`...)
		b = strconv.AppendInt(b, int64(it.Status), 10)
		if len(it.Job) > 0 {
			b = append(append(b, `,"job":`...), it.Job...)
		}
		if len(it.Error) > 0 {
			b = append(append(b, `,"error":`...), it.Error...)
		}
		b = append(b, '}')
	}
	b = append(b, "]}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func allCreated(items []BatchItem) bool {
	for _, it := range items {
		if it.Status != http.StatusCreated {
			return false
		}
	}
	return true
}

// batchSubmitter is a Backend that creates several jobs in one store
// write, in their order (grains.Front.SubmitMany).
type batchSubmitter interface {
	SubmitMany(ctx context.Context, jobs []persistence.Job) []persistence.Created
}

// submitMany creates the jobs of subs, answered in their order: in one
// call where the backend can, else one after another.
func (s *Server) submitMany(ctx context.Context, subs []submission) []persistence.Created {
	if len(subs) == 0 {
		return nil
	}
	jobs := make([]persistence.Job, len(subs))
	for n := range subs {
		jobs[n] = subs[n].job
	}
	if b, ok := s.b.(batchSubmitter); ok {
		return b.SubmitMany(ctx, jobs)
	}
	return persistence.CreateEach(jobs, func(j persistence.Job) (persistence.Job, bool, error) { return s.b.Submit(ctx, j) })
}

// batchItem is one item of POST /jobs:batch: a POST /jobs body and its
// Idempotency-Key, decoded in one pass.
type batchItem struct {
	SubmitRequest
	IdempotencyKey json.RawMessage `json:"idempotency_key"`
}

// prepareItem checks one batch item as POST /jobs checks its body, with
// the item's idempotency_key as its Idempotency-Key.
func (s *Server) prepareItem(ctx context.Context, raw json.RawMessage, before *ahead) (submission, error) {
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return submission{}, Errorf(http.StatusBadRequest, "bad_json", "the item is not a JSON object")
	}
	if len(raw) > maxBodyBytes {
		return submission{}, bodyError(&http.MaxBytesError{Limit: maxBodyBytes})
	}
	var it batchItem
	if err := decodeSubmit(raw, &it); err != nil {
		return submission{}, err
	}
	var key string
	if it.IdempotencyKey != nil {
		if err := json.Unmarshal(it.IdempotencyKey, &key); err != nil {
			return submission{}, Errorf(http.StatusBadRequest, "bad_idempotency_key", "%s is not a string", batchKeyField)
		}
	}
	return s.prepareSubmit(ctx, it.SubmitRequest, key, before)
}

// item is the answer recorded as one batch item: the job, or the error
// object of the answer.
func (w *itemRecorder) item() BatchItem {
	it := BatchItem{Status: w.status()}
	if it.Status < 300 {
		it.Job = bytes.TrimSpace(w.body.Bytes())
		return it
	}
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(w.body.Bytes(), &e) == nil && len(e.Error) > 0 {
		it.Error = e.Error
	} else {
		it.Error, _ = json.Marshal(map[string]string{"code": "internal", "message": w.body.String()})
	}
	return it
}

// itemRecorder takes one item's answer as POST /jobs would write it.
type itemRecorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

// errorItem is the batch item of an item refused with err, as POST /jobs
// would answer it.
func errorItem(err error) BatchItem {
	rec := newItemRecorder()
	writeError(rec, err)
	return rec.item()
}

func newItemRecorder() *itemRecorder { return &itemRecorder{header: http.Header{}} }

func (w *itemRecorder) Header() http.Header { return w.header }

func (w *itemRecorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(b)
}

func (w *itemRecorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *itemRecorder) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
