package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/paprika-hub/paprika/internal/seal"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// SubmitRequest is the body of POST /jobs.
type SubmitRequest struct {
	Mode        string            `json:"mode"`
	Params      json.RawMessage   `json:"params"`
	TimeoutS    int               `json:"timeout_s"`
	MaxAttempts int               `json:"max_attempts"`
	Labels      map[string]string `json:"labels"`
	// Priority is 0..9; nil means persistence.DefaultPriority.
	Priority *int `json:"priority"`
	// RequireCapacity refuses the job (503 no_capacity) instead of queuing
	// it when no alive worker could ever run it.
	RequireCapacity bool `json:"require_capacity"`
	// RunAt (RFC 3339) or DelayS delays the job: it is scheduled until then
	// (api/retry.go).
	RunAt  *time.Time `json:"run_at"`
	DelayS *float64   `json:"delay_s"`
	// RetryBackoff is the job's retry schedule; nil takes the hub's default.
	RetryBackoff *persistence.RetryBackoff `json:"retry_backoff"`
	// Tenant is who the job is for; "" = the scheduler.tenant_label
	// label's value, else the default tenant.
	Tenant string `json:"tenant"`
}

// Limits of a submission.
const (
	maxTimeoutS     = 7 * 24 * 3600
	maxAttemptsCap  = 10
	maxIdemKeyLen   = 200
	maxListLimit    = 1000
	defaultListSize = 50
)

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	buf := bodyBufs.Get().(*bytes.Buffer)
	defer putBodyBuf(buf)
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBodyBytes)); err != nil {
		writeError(w, bodyError(err))
		return
	}
	var req SubmitRequest
	err := decodeSubmit(buf.Bytes(), &req)
	var sub submission
	if err == nil {
		sub, err = s.prepareSubmit(r.Context(), req, r.Header.Get("Idempotency-Key"), nil)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	job, created, err := s.b.Submit(r.Context(), sub.job)
	if err != nil {
		writeError(w, err)
		return
	}
	s.answerSubmit(w, &sub, job, created)
}

// bodyError is the answer to a submission body that could not be read.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "the body is over %d bytes", maxBodyBytes)
	}
	return Errorf(http.StatusBadRequest, "bad_body", "read body: %v", err)
}

// submission is a POST /jobs body that passed every check, made the job
// to create.
type submission struct {
	req    SubmitRequest
	key    string // its Idempotency-Key
	tenant string
	job    persistence.Job
}

// ahead counts the jobs a request submits before the one being checked
// (a batch's earlier items), which the queue limits count as queued: the
// hub's own count of its submits only moves once they are created.
type ahead struct {
	jobs     int
	byTenant map[string]int
}

func (a *ahead) add(tenant string) {
	if a.byTenant == nil {
		a.byTenant = map[string]int{}
	}
	a.jobs++
	a.byTenant[tenant]++
}

// prepareSubmit checks a decoded submission and its Idempotency-Key key
// with every refusal POST /jobs answers before it creates anything, and
// makes its job. before (nil for none) holds the same request's jobs
// ahead of it.
func (s *Server) prepareSubmit(ctx context.Context, req SubmitRequest, key string, before *ahead) (submission, error) {
	req, err := s.checkSubmit(ctx, req)
	if err != nil {
		return submission{}, err
	}
	if len(key) > maxIdemKeyLen {
		return submission{}, Errorf(http.StatusBadRequest, "bad_idempotency_key", "Idempotency-Key is longer than %d bytes", maxIdemKeyLen)
	}
	if before == nil {
		before = &ahead{}
	}
	if err := s.checkQueue(ctx, before.jobs); err != nil {
		return submission{}, err
	}
	tenant, err := s.tenantOf(req)
	if err == nil {
		err = s.checkTenantQueue(ctx, tenant, before.byTenant[tenant])
	}
	if err != nil {
		return submission{}, err
	}
	if req.RequireCapacity {
		if err := s.checkCapacity(ctx, req.Mode); err != nil {
			return submission{}, err
		}
	}
	priority := persistence.DefaultPriority
	if req.Priority != nil {
		priority = *req.Priority
	}
	timeout := req.TimeoutS
	if timeout == 0 {
		timeout = int(s.opts.DefaultTimeout / time.Second)
	}
	attempts := req.MaxAttempts
	if attempts == 0 {
		attempts = max(s.opts.MaxAttempts, 1)
	}
	// The store keeps the proxy password sealed; req.Params keeps it clear
	// for the idempotency comparison in answerSubmit.
	params, err := s.opts.ParamsKey.SealParams(req.Params)
	if err != nil {
		return submission{}, Errorf(http.StatusBadRequest, "bad_params", "%v", err)
	}
	return submission{req: req, key: key, tenant: tenant, job: persistence.Job{
		Mode: req.Mode, Params: params, TimeoutS: timeout, MaxAttempts: attempts,
		Labels: req.Labels, IdempotencyKey: key, Priority: priority, Tenant: tenant,
		RunAt: req.runAt(time.Now()), RetryBackoff: req.RetryBackoff,
	}}, nil
}

// answerSubmit answers POST /jobs for sub, whose create gave job:
// 201 when created, else 200 with the stored job its key named — or 422
// when that job was submitted with other mode, params, labels or tenant.
func (s *Server) answerSubmit(w http.ResponseWriter, sub *submission, job persistence.Job, created bool) {
	status := http.StatusCreated
	if created {
		s.queue.added(sub.tenant)
	} else {
		status = http.StatusOK
		if sub.key != "" && (!s.sameSubmission(job, sub.req) || job.Tenant != sub.tenant) {
			// Answering with the stored job would tell the client its new
			// request was taken when it was not (a reused or colliding key).
			writeError(w, Errorf(http.StatusUnprocessableEntity, "idempotency_key_reused",
				"Idempotency-Key %q was used for job %s with a different mode, params or labels", sub.key, job.ID))
			return
		}
	}
	w.Header().Set("Location", "/jobs/"+job.ID)
	writeJSON(w, status, redacted(job))
}

// bodyBufs holds the buffers submissions are read into: every value
// decoded from one is a copy (json.RawMessage included), so the buffer is
// free again once the body is decoded.
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// bodyBufKeep is the largest body buffer put back: one big body does not
// pin its buffer for the next small ones.
const bodyBufKeep = 64 << 10

func putBodyBuf(b *bytes.Buffer) {
	if b.Cap() > bodyBufKeep {
		return
	}
	b.Reset()
	bodyBufs.Put(b)
}

// decodeSubmit decodes a submission's body into v (a SubmitRequest, or a
// batch item, which has one more field), a 400 bad_json when it is not
// one. The body is read whole before: a body over the limit is a 413
// whatever its first bytes are, not a 400 for the JSON error a streaming
// decoder would meet first.
func decodeSubmit(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := decodeBody(dec, v); err != nil {
		return Errorf(http.StatusBadRequest, "bad_json", "the body is not a valid job: %v", err)
	}
	return nil
}

// checkSubmit validates a decoded submission, with a 4xx for each fault,
// and fills in its params' default.
func (s *Server) checkSubmit(ctx context.Context, req SubmitRequest) (SubmitRequest, error) {
	if req.TimeoutS < 0 || req.TimeoutS > maxTimeoutS {
		return req, Errorf(http.StatusBadRequest, "bad_timeout", "timeout_s %d is out of range 1..%d", req.TimeoutS, maxTimeoutS)
	}
	if req.MaxAttempts < 0 || req.MaxAttempts > maxAttemptsCap {
		return req, Errorf(http.StatusBadRequest, "bad_max_attempts", "max_attempts %d is out of range 1..%d", req.MaxAttempts, maxAttemptsCap)
	}
	if p := req.Priority; p != nil && (*p < persistence.MinPriority || *p > persistence.MaxPriority) {
		return req, &Error{Status: http.StatusBadRequest, Code: "bad_priority",
			Message: fmt.Sprintf("priority %d is out of range %d..%d", *p, persistence.MinPriority, persistence.MaxPriority),
			Extra:   map[string]any{"field": "priority"}}
	}
	if err := checkDelay(&req, time.Now()); err != nil {
		return req, err
	}
	if err := s.limits.checkLabels(req.Labels); err != nil {
		return req, err
	}
	if err := s.limits.checkParams(req.Params); err != nil {
		return req, err
	}
	if len(req.Params) == 0 || string(req.Params) == "null" {
		req.Params = json.RawMessage("{}")
	}
	if err := s.validateModeParams(ctx, req.Mode, req.Params); err != nil {
		return req, err
	}
	return req, nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	job, err := s.b.Job(r.Context(), id)
	if err != nil {
		writeError(w, notFound(err, "job", id))
		return
	}
	if job.Status == persistence.StatusQueued {
		// Best effort: without the fleet's view the job is shown as stored.
		if wf, err := s.b.WaitingFor(r.Context(), job.Mode); err == nil {
			job.WaitingFor = wf
		}
		if job.WaitingFor == "" {
			job.WaitingFor = s.profileWait(r.Context(), job) // profiles.go
		}
	}
	writeJSON(w, http.StatusOK, redacted(job))
}

// checkCapacity answers require_capacity: 503 no_capacity when no alive
// worker could ever run a job of mode. Busy workers count: the job may
// queue for them.
func (s *Server) checkCapacity(ctx context.Context, mode string) error {
	wf, err := s.b.WaitingFor(ctx, mode)
	if err != nil {
		return fmt.Errorf("require_capacity: read the fleet: %w", err)
	}
	if wf != "" {
		return &Error{Status: http.StatusServiceUnavailable, Code: string(messages.CodeNoCapacity),
			Message: fmt.Sprintf("no alive worker can run a %s job: it would wait for %s", mode, wf),
			Extra:   map[string]any{"waiting_for": wf}}
	}
	return nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lq := persistence.ListQuery{Status: persistence.Status(q.Get("status")), Cursor: q.Get("cursor"), Limit: defaultListSize}
	if lq.Status != "" && !lq.Status.Valid() {
		writeError(w, Errorf(http.StatusBadRequest, "bad_status", "status %q is not one of %s", lq.Status, statusNames()))
		return
	}
	if err := listTenantPriority(q, &lq); err != nil {
		writeError(w, err)
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			writeError(w, Errorf(http.StatusBadRequest, "bad_limit", "limit %q is not an integer in 1..%d", v, maxListLimit))
			return
		}
		lq.Limit = n
	}
	if err := s.listFilters(q, &lq); err != nil {
		writeError(w, err)
		return
	}
	page, next, err := s.jobPage(r.Context(), lq)
	if n := s.limits.fitList(page); err == nil && n < len(page) {
		// Over limits.max_list_bytes: the same page, shorter, so that the
		// store's own cursor says where it ended.
		lq.Limit = n
		page, next, err = s.jobPage(r.Context(), lq)
	}
	if err != nil {
		if errors.Is(err, persistence.ErrBadCursor) {
			err = Errorf(http.StatusBadRequest, "bad_cursor", "cursor %q is not one this hub handed out", lq.Cursor)
		}
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": page, "next_cursor": next})
}

// jobPage is one page of jobs as the answer holds them: redacted and
// encoded once, so that limits.max_list_bytes is checked on what is sent.
func (s *Server) jobPage(ctx context.Context, lq persistence.ListQuery) ([]json.RawMessage, string, error) {
	jobs, next, err := s.b.Jobs(ctx, lq)
	if err != nil {
		return nil, "", err
	}
	page := make([]json.RawMessage, len(jobs))
	for i := range jobs {
		if page[i], err = json.Marshal(redacted(jobs[i])); err != nil {
			return nil, "", fmt.Errorf("encode job %s: %w", jobs[i].ID, err)
		}
	}
	return page, next, nil
}

// sameSubmission reports whether req asks for the job stored under its
// Idempotency-Key: the same mode, params (as JSON values, so key order and
// spacing do not matter; a sealed proxy password is opened to compare) and
// labels (absent = empty). Timeout and attempts are left out: their
// defaults come from the hub's config, which may differ between the two
// requests' hubs.
func (s *Server) sameSubmission(stored persistence.Job, req SubmitRequest) bool {
	if opened, err := s.opts.ParamsKey.OpenParams(stored.Params); err == nil {
		stored.Params = opened
	}
	if stored.Mode != req.Mode || len(stored.Labels) != len(req.Labels) {
		return false
	}
	for k, v := range req.Labels {
		if sv, ok := stored.Labels[k]; !ok || sv != v {
			return false
		}
	}
	return sameJSON(stored.Params, req.Params)
}

// sameJSON compares two JSON documents by value; "" and null count as {}.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if decodeParams(a, &va) != nil || decodeParams(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

func decodeParams(raw json.RawMessage, v *any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // 1 and 1.0 differ as text; keep numbers exact
	return dec.Decode(v)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	job, err := s.b.Cancel(r.Context(), id)
	if err != nil {
		writeError(w, notFound(err, "job", id))
		return
	}
	writeJSON(w, http.StatusOK, redacted(job))
}

// redacted is the job as the API shows it: a proxy password, sealed in
// the store, as "***".
func redacted(j persistence.Job) persistence.Job {
	j.Params = seal.RedactParams(j.Params)
	return j
}

func pathID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !validID(id) {
		writeError(w, Errorf(http.StatusBadRequest, "bad_id", "id %q: use 1-64 of A-Z a-z 0-9 _ -", id))
		return "", false
	}
	return id, true
}

func notFound(err error, what, id string) error {
	if errors.Is(err, persistence.ErrNotFound) {
		return Errorf(http.StatusNotFound, "not_found", "no %s %s", what, id)
	}
	return fmt.Errorf("%s %s: %w", what, id, err)
}
