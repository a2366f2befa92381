package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

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
// each run through the very handler of POST /jobs (same validation, same
// answers), answered per item in order. 201 when every item was created,
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
	// The items go one after another, each answered after its commit: a
	// store must not hold one back for company.
	r = r.WithContext(persistence.WithoutCommitWait(r.Context()))
	allCreated := true
	for i, raw := range items {
		it := s.submitItem(r, raw)
		if it.Status != http.StatusCreated {
			allCreated = false
		}
		out.Results[i] = it
	}
	status := http.StatusMultiStatus
	if allCreated {
		status = http.StatusCreated
	}
	writeJSON(w, status, out)
}

// submitItem runs one batch item through POST /jobs's handler.
func (s *Server) submitItem(r *http.Request, raw json.RawMessage) BatchItem {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return itemError(Errorf(http.StatusBadRequest, "bad_json", "the item is not a JSON object"))
	}
	var key string
	if k, ok := fields[batchKeyField]; ok {
		if err := json.Unmarshal(k, &key); err != nil {
			return itemError(Errorf(http.StatusBadRequest, "bad_idempotency_key", "%s is not a string", batchKeyField))
		}
		delete(fields, batchKeyField)
		b, err := json.Marshal(fields)
		if err != nil {
			return itemError(Errorf(http.StatusBadRequest, "bad_json", "re-encode item: %v", err))
		}
		raw = b
	}
	sub := r.Clone(r.Context())
	sub.Body, sub.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	sub.Header.Del("Idempotency-Key")
	if key != "" {
		sub.Header.Set("Idempotency-Key", key)
	}
	rec := &itemRecorder{header: http.Header{}}
	s.submit(rec, sub)
	it := BatchItem{Status: rec.status()}
	if it.Status < 300 {
		it.Job = bytes.TrimSpace(rec.body.Bytes())
		return it
	}
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(rec.body.Bytes(), &e) == nil && len(e.Error) > 0 {
		it.Error = e.Error
	} else {
		it.Error, _ = json.Marshal(map[string]string{"code": "internal", "message": rec.body.String()})
	}
	return it
}

func itemError(e *Error) BatchItem {
	b, _ := json.Marshal(map[string]any{"code": e.Code, "message": e.Message})
	return BatchItem{Status: e.Status, Error: b}
}

// itemRecorder takes one item's answer from the POST /jobs handler.
type itemRecorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

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
