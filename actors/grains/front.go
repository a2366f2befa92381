package grains

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paprika-hub/paprika/api"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// Front is what the HTTP API asks of the grains: it stores new jobs and
// wakes their grains, and relays cancels, worker statuses and session calls
// to the grain that owns each, on whichever hub it lives. Reads go to the
// stores: they need no grain.
type Front struct {
	d    *Deps
	caps fleetCaps // WaitingFor's cached view of the fleet
	// submitted is paprika_jobs_submitted_total's series by metric mode,
	// looked up once rather than per submission.
	submitted map[string]prometheus.Counter
}

// NewFront returns the API's way in.
func NewFront(d *Deps) *Front {
	f := &Front{d: d, submitted: map[string]prometheus.Counter{}}
	if d.Metrics != nil {
		for _, m := range append(slices.Clone(messages.Modes), MetricModeCustom) {
			f.submitted[m] = d.Metrics.JobsSubmitted.WithLabelValues(m)
		}
	}
	return f
}

// Submit stores a queued job and wakes its grain, which enqueues it with the
// scheduler. The store write comes first: once 201 is sent the job exists
// whatever happens to this hub.
func (f *Front) Submit(ctx context.Context, j persistence.Job) (persistence.Job, bool, error) {
	f.prepare(&j)
	took := prometheus.NewTimer(f.d.Metrics.StoreWrites.Create)
	var (
		stored             persistence.Job
		created, announced bool
		err                error
	)
	if a, ok := f.d.Jobs.(announcingCreator); ok {
		// The grain wakes while the create is on its way to disk, so its
		// claim can share the create's commit (CreateAnnounced).
		stored, created, err = a.CreateAnnounced(ctx, j, func(j persistence.Job) {
			announced = true
			f.woken(j)
		})
	} else {
		stored, created, err = f.d.Jobs.Create(ctx, j)
	}
	took.ObserveDuration()
	if err != nil {
		return stored, false, fmt.Errorf("create job: %w", err)
	}
	if created && !announced {
		f.woken(stored)
	}
	return stored, created, nil
}

// prepare makes j a new job: queued (or scheduled, with a run_at),
// created now, with an id whose grain lives on this hub when it can.
func (f *Front) prepare(j *persistence.Job) {
	j.Status = persistence.StatusQueued
	if !j.RunAt.IsZero() {
		j.Status = persistence.StatusScheduled // held until run_at (delayed job)
	}
	j.CreatedAt = time.Now().UTC()
	if j.ID == "" {
		j.ID = mintLocal(persistence.NewJobID, ownedHere(f.d.Cluster(), KindJob))
	}
}

// SubmitMany is Submit for several jobs, answered in their order. A
// store that can (bolt.JobStore.CreateMany) creates them all in one
// write — one commit, or a share of one, for the lot — in their order,
// and each created job's grain is woken once that write is durable;
// with another store they are submitted one after another.
func (f *Front) SubmitMany(ctx context.Context, jobs []persistence.Job) []persistence.Created {
	bc, ok := f.d.Jobs.(batchCreator)
	if !ok {
		return persistence.CreateEach(jobs, func(j persistence.Job) (persistence.Job, bool, error) { return f.Submit(ctx, j) })
	}
	for i := range jobs {
		f.prepare(&jobs[i])
	}
	took := prometheus.NewTimer(f.d.Metrics.StoreWrites.Create)
	out := bc.CreateMany(ctx, jobs)
	took.ObserveDuration()
	for i := range out {
		switch {
		case out[i].Err != nil:
			out[i].Err = fmt.Errorf("create job: %w", out[i].Err)
		case out[i].Created:
			f.woken(out[i].Job)
		}
	}
	return out
}

// batchCreator is a job store that creates several jobs in one write
// (bolt.JobStore.CreateMany).
type batchCreator interface {
	CreateMany(ctx context.Context, jobs []persistence.Job) []persistence.Created
}

// announcingCreator is a job store that can announce a new job before its
// create is durable (bolt.JobStore.CreateAnnounced).
type announcingCreator interface {
	CreateAnnounced(ctx context.Context, j persistence.Job, announce func(persistence.Job)) (persistence.Job, bool, error)
}

// woken counts a new job and wakes its grain with the record as stored:
// the grain it activates need not read it back.
func (f *Front) woken(j persistence.Job) {
	if c := f.submitted[metricMode(j.Mode)]; c != nil {
		c.Inc()
	} else {
		f.d.Metrics.JobsSubmitted.WithLabelValues(metricMode(j.Mode)).Inc()
	}
	if err := wake(f.d.Cluster(), j.ID, recordOf(j)); err != nil {
		// Stored (or on its way) and queued: the re-drive picks it up.
		f.d.Log.Warn("could not wake a new job; re-drive will", "job_id", j.ID, "err", err)
	}
}

// Job reads a job from the store: reads need no grain.
func (f *Front) Job(ctx context.Context, id string) (persistence.Job, error) {
	return f.d.Jobs.Get(ctx, id)
}

// WaitingFor names what a job of mode needs that no alive worker of the
// fleet has ("a worker with a chromium lane"), "" when some could run it:
// computed from the registry when asked (cached for fleetCapsTTL), so it
// disappears as soon as such a worker is alive, with no state to keep.
func (f *Front) WaitingFor(ctx context.Context, mode string) (string, error) {
	return f.caps.waitingFor(ctx, f.d, mode)
}

// Modes lists the modes the fleet's alive workers run now, with their
// schemas and how many workers and slots serve each (GET /modes), from the
// registry (cached for fleetCapsTTL), so every hub answers the same.
func (f *Front) Modes(ctx context.Context) ([]persistence.ModeInfo, error) {
	return f.caps.fleetModes(ctx, f.d)
}

// Jobs lists jobs.
func (f *Front) Jobs(ctx context.Context, q persistence.ListQuery) ([]persistence.Job, string, error) {
	return f.d.Jobs.List(ctx, q)
}

// Cancel asks the job grain, which owns the transition.
func (f *Front) Cancel(ctx context.Context, id string) (persistence.Job, error) {
	if _, err := f.d.Jobs.Get(ctx, id); err != nil {
		return persistence.Job{}, err
	}
	r, err := CallContext(ctx, f.d.Cluster(), id, KindJob, &messages.JobCancel{}, f.d.Timing.GrainTimeout)
	if err != nil {
		return persistence.Job{}, fmt.Errorf("cancel job %s: %w: %w", id, persistence.ErrUnavailable, err)
	}
	var j persistence.Job
	if len(r.Json) > 0 {
		_ = json.Unmarshal(r.Json, &j)
	}
	if !r.Ok {
		if r.Code == "conflict" {
			return j, api.Errorf(http.StatusConflict, "already_final", "%s", r.Message)
		}
		return j, fmt.Errorf("cancel job %s: %w: %s", id, persistence.ErrUnavailable, r.Message)
	}
	return j, nil
}

// Workers is the fleet-wide view from the registry, with alive computed now.
func (f *Front) Workers(ctx context.Context) ([]persistence.WorkerInfo, error) {
	ws, err := f.d.Workers.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	now := time.Now()
	for i := range ws {
		ws[i].Alive = ws[i].Connected && now.Sub(ws[i].LastSeen) <= f.d.Timing.AliveWindow
		ws[i] = ws[i].Public() // no actor address leaves the hub
	}
	return ws, nil
}

// SetWorkerStatus sets a worker's status (active, drain, standby; pending
// with auth.worker_approval).
func (f *Front) SetWorkerStatus(ctx context.Context, id, status string) (persistence.WorkerInfo, error) {
	return f.PatchWorker(ctx, id, api.WorkerPatch{Status: status})
}

// PatchWorker applies an operator's change to a worker — its status, the
// cap on its slots — through the worker grain, which owns both.
func (f *Front) PatchWorker(ctx context.Context, id string, p api.WorkerPatch) (persistence.WorkerInfo, error) {
	var w persistence.WorkerInfo
	msg := &messages.WorkerSetStatus{Status: p.Status}
	if p.MaxConcurrent != nil {
		msg.MaxConcurrent, msg.SetMaxConcurrent = int32(*p.MaxConcurrent), true
	}
	r, err := CallContext(ctx, f.d.Cluster(), id, KindWorker, msg, f.d.Timing.GrainTimeout)
	if err != nil {
		return w, fmt.Errorf("set worker %s: %w: %w", id, persistence.ErrUnavailable, err)
	}
	if !r.Ok {
		switch {
		case messages.CodeNotFound.Is(r):
			return w, fmt.Errorf("worker %s: %w", id, persistence.ErrNotFound)
		case messages.CodeNotApproved.Is(r):
			return w, api.Errorf(http.StatusConflict, r.Code, "%s", r.Message)
		case messages.CodeUnavailable.Is(r):
			return w, fmt.Errorf("set worker %s: %w: %s", id, persistence.ErrUnavailable, r.Message)
		}
		return w, api.Errorf(http.StatusBadRequest, r.Code, "%s", r.Message)
	}
	if err := json.Unmarshal(r.Json, &w); err != nil {
		return w, fmt.Errorf("decode worker %s: %w", id, err)
	}
	return w.Public(), nil
}

// Hubs lists the hub registry.
func (f *Front) Hubs(ctx context.Context) ([]persistence.HubInfo, error) {
	hs, err := f.d.Hubs.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list hubs: %w", err)
	}
	now := time.Now()
	for i := range hs {
		hs[i].Local = hs[i].ID == f.d.HubID
		// The key lives hub_ttl (so a dead hub stays listed); alive means
		// beating within the member timeout, as the cluster sees it.
		hs[i].Alive = hs[i].Alive && now.Sub(hs[i].LastSeen) <= f.d.Timing.MemberTimeout
	}
	return hs, nil
}

// sessionCall asks the session grain, wherever it lives, and maps its
// error codes onto API errors. ctx is the request's: a client that goes
// away stops the wait (the grain still finishes what it was sent).
func (f *Front) sessionCall(ctx context.Context, id string, msg interface{}) (json.RawMessage, error) {
	timeout := f.d.Timing.ForwardTimeout + f.d.Timing.GrainTimeout
	if _, open := msg.(*messages.SessionOpen); open {
		timeout += f.d.Timing.SessionProfileWait // an open may wait for its profile
	}
	r, err := CallContext(ctx, f.d.Cluster(), id, KindSession, msg, timeout)
	if err != nil {
		// Still a 503 to the client; errors.Is tells an ended ctx apart.
		return nil, fmt.Errorf("session %s: %w: %w", id, persistence.ErrUnavailable, err)
	}
	if r.Ok {
		return r.Json, nil
	}
	switch r.Code {
	case "not_found":
		return nil, api.Errorf(http.StatusNotFound, "not_found", "%s", r.Message)
	case "closed":
		return nil, api.Errorf(http.StatusGone, "session_closed", "%s", r.Message)
	case "no_capacity":
		return nil, api.Errorf(http.StatusServiceUnavailable, "no_capacity", "%s", r.Message)
	case "command_failed":
		return nil, api.Errorf(http.StatusUnprocessableEntity, "command_failed", "%s", r.Message)
	case "timeout":
		return nil, api.Errorf(http.StatusGatewayTimeout, "timeout", "%s", r.Message)
	case string(messages.CodeTooMany):
		return nil, &api.Error{Status: http.StatusTooManyRequests, Code: "too_many_cdp_clients", Message: r.Message,
			Extra: map[string]any{"limit": "limits.cdp_tunnels_per_session", "max": f.cdpTunnels()}, RetryAfter: "5"}
	case string(messages.CodeNotHolder):
		return nil, api.Errorf(http.StatusForbidden, string(messages.CodeNotHolder), "%s", r.Message)
	case string(messages.CodeProfileInUse):
		var held struct {
			InUseBy string `json:"in_use_by"`
		}
		_ = json.Unmarshal(r.Json, &held)
		return nil, &api.Error{Status: http.StatusConflict, Code: string(messages.CodeProfileInUse), Message: r.Message,
			Extra: map[string]any{"in_use_by": held.InUseBy}, RetryAfter: "5"}
	case string(messages.CodeBadCommand):
		return nil, api.Errorf(http.StatusBadRequest, "bad_tunnel", "%s", r.Message)
	case string(messages.CodeConflict):
		return nil, api.Errorf(http.StatusConflict, "conflict", "%s", r.Message)
	case "unavailable":
		// The session store could not be read: whether the session exists
		// is unknown, so neither 404 nor 410.
		return nil, fmt.Errorf("%s: %w", r.Message, persistence.ErrUnavailable)
	}
	return nil, api.Errorf(http.StatusBadGateway, r.Code, "%s", r.Message)
}

// OpenSession opens a session on a free chromium lane; opts go to the
// worker with the open command.
func (f *Front) OpenSession(ctx context.Context, labels map[string]string, idleTimeoutS int, opts messages.BrowserOptions) (json.RawMessage, error) {
	m := &messages.SessionOpen{IdleTimeoutS: int32(idleTimeoutS), Labels: labels}
	// A profile alone is not a launch option (Empty), but the worker
	// needs it to restore and save.
	if !opts.Empty() || opts.Profile != "" {
		b, err := json.Marshal(opts)
		if err != nil {
			return nil, fmt.Errorf("encode browser options: %w", err)
		}
		m.Options = b
	}
	return f.sessionCall(ctx, messages.SessionIDPrefix+RandomHex(10), m)
}

// Session reads a session from its grain.
func (f *Front) Session(ctx context.Context, id string) (json.RawMessage, error) {
	return f.sessionCall(ctx, id, &messages.SessionGet{})
}

// SessionCommand runs one command on the session's lane.
func (f *Front) SessionCommand(ctx context.Context, id string, command json.RawMessage) (json.RawMessage, error) {
	return f.sessionCall(ctx, id, &messages.SessionCommand{Command: command})
}

// CloseSession closes a session and frees its lane.
func (f *Front) CloseSession(ctx context.Context, id string) (json.RawMessage, error) {
	return f.sessionCall(ctx, id, &messages.SessionClose{})
}

// ListSessions is a page of the open sessions, from the session store:
// its records are the open sessions, whichever hub's grain holds each (a
// session that closes deletes its record). A record whose last recorded
// use is further back than its idle timeout plus the touch interval (the
// most its last_used may lag, see touch) is left out: its session is idle
// past its timeout, and its grain closes it on the next message, so GET
// would answer it closed.
func (f *Front) ListSessions(ctx context.Context, q persistence.SessionListQuery) ([]json.RawMessage, string, error) {
	recs, next, err := f.d.Sessions.List(ctx, q)
	if err != nil {
		return nil, "", fmt.Errorf("list sessions: %w", err)
	}
	now := f.d.Clock()
	out := make([]json.RawMessage, 0, len(recs))
	for _, r := range recs {
		idle := time.Duration(max(r.IdleTimeoutS, 1)) * time.Second
		if now.Sub(r.LastUsed) > idle+sessionTouchEvery {
			continue
		}
		b, err := json.Marshal(sessionOfRecord(r))
		if err != nil {
			return nil, "", fmt.Errorf("list sessions: encode %s: %w", r.ID, err)
		}
		out = append(out, b)
	}
	return out, next, nil
}

// sessionOfRecord is the session object of an open session's record. The
// lane's DevTools address stays out: no API answer exposes it (issue 13,
// lane hygiene); clients reach the browser through the hub.
func sessionOfRecord(r persistence.SessionRecord) Session {
	return Session{ID: r.ID, WorkerID: r.WorkerID, Lane: r.Lane, Status: SessionOpen,
		IdleTimeoutS: r.IdleTimeoutS, Labels: r.Labels, CreatedAt: r.CreatedAt, LastUsed: r.LastUsed, Browser: r.Browser,
		Profile: r.Profile}
}

func (f *Front) cdpTunnels() int {
	if n := f.d.Timing.CDPTunnels; n > 0 {
		return n
	}
	return defaultCDPTunnels
}

// OpenTunnel asks session id's grain for a CDP tunnel whose client end
// is client; nil means the client's socket may be upgraded. target, when
// set, is a page target of the lane (else the browser).
func (f *Front) OpenTunnel(ctx context.Context, id, tunnelID string, client *actor.PID, target string) error {
	_, err := f.sessionCall(ctx, id, &messages.SessionTunnelOpen{TunnelId: tunnelID, Client: RefOf(client), Target: target})
	return err
}

// AttachTunnel asks the grain of tunnelID's session for the client end
// worker workerID's tunnel socket is to be joined to.
func (f *Front) AttachTunnel(ctx context.Context, tunnelID, workerID string) (*actor.PID, error) {
	id, ok := messages.TunnelSession(tunnelID)
	if !ok {
		return nil, api.Errorf(http.StatusBadRequest, "bad_id", "%q is no tunnel id", tunnelID)
	}
	b, err := f.sessionCall(ctx, id, &messages.SessionTunnelAttach{TunnelId: tunnelID, WorkerId: workerID})
	if err != nil {
		return nil, err
	}
	var c SessionTunnelClaim
	if err := json.Unmarshal(b, &c); err != nil || c.ID == "" {
		return nil, fmt.Errorf("session %s: tunnel claim %q: %w", id, b, persistence.ErrUnavailable)
	}
	return actor.NewPID(c.Address, c.ID), nil
}

// TouchTunnel tells the session a tunnel is still open (from the client
// end's turn).
func (f *Front) TouchTunnel(ctx actor.SenderContext, tunnelID string, client *actor.PID) {
	if id, ok := messages.TunnelSession(tunnelID); ok {
		Send(ctx, f.d.Cluster(), id, KindSession, &messages.SessionTunnelTouch{TunnelId: tunnelID, Client: RefOf(client)})
	}
}

// EndTunnel tells the session a tunnel closed; with closeSession (the
// one-step GET /cdp) the session is closed too.
func (f *Front) EndTunnel(ctx actor.SenderContext, tunnelID string, closeSession bool) {
	id, ok := messages.TunnelSession(tunnelID)
	if !ok {
		return
	}
	Send(ctx, f.d.Cluster(), id, KindSession, &messages.SessionTunnelEnd{TunnelId: tunnelID})
	if closeSession {
		Send(ctx, f.d.Cluster(), id, KindSession, &messages.SessionClose{})
	}
}

// RandomHex is n random bytes in hex: ids of hubs and sessions.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Retry asks the job grain to run a failed job again (POST
// /jobs/{id}/retry); the grain owns the transition.
func (f *Front) Retry(ctx context.Context, id string) (persistence.Job, error) {
	if _, err := f.d.Jobs.Get(ctx, id); err != nil {
		return persistence.Job{}, err
	}
	r, err := CallContext(ctx, f.d.Cluster(), id, KindJob, &messages.JobRetry{}, f.d.Timing.GrainTimeout)
	if err != nil {
		return persistence.Job{}, fmt.Errorf("retry job %s: %w: %w", id, persistence.ErrUnavailable, err)
	}
	var j persistence.Job
	if len(r.Json) > 0 {
		_ = json.Unmarshal(r.Json, &j)
	}
	if !r.Ok {
		if messages.CodeConflict.Is(r) {
			return j, &api.Error{Status: http.StatusConflict, Code: "not_failed", Message: r.Message,
				Extra: map[string]any{"status": j.Status}}
		}
		return j, fmt.Errorf("retry job %s: %w: %s", id, persistence.ErrUnavailable, r.Message)
	}
	return j, nil
}
