package grains

import (
	"maps"
	"time"

	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// recordOf is the JobRecord of a job Create just stored, carried by the
// wake of its grain (JobEnsure.created); nil when j holds anything a
// JobRecord does not carry, so the wake goes without and the grain reads
// the store instead of acting on a partial copy.
func recordOf(j persistence.Job) *messages.JobRecord {
	if !fresh(j) || j.Reason != "" || j.Error != "" || j.WorkerID != "" || j.Lane != "" || len(j.AttemptsLog) > 0 ||
		!j.StartedAt.IsZero() || !j.FinishedAt.IsZero() || len(j.Result) > 0 || len(j.Assets) > 0 {
		return nil
	}
	r := &messages.JobRecord{Id: j.ID, Mode: j.Mode, Params: j.Params, Status: string(j.Status),
		Attempts: int32(j.Attempts), MaxAttempts: int32(j.MaxAttempts), Priority: int32(j.Priority), Tenant: j.Tenant,
		TimeoutS: int32(j.TimeoutS), RunAtUnixNs: unixNs(j.RunAt), CreatedAtUnixNs: unixNs(j.CreatedAt),
		Labels: j.Labels, IdempotencyKey: j.IdempotencyKey}
	if b := j.RetryBackoff; b != nil {
		r.HasRetryBackoff, r.RetryBaseS, r.RetryMaxS = true, b.BaseS, b.MaxS
	}
	return r
}

// jobOfRecord is the job a JobRecord carries; false when it is not the
// record of job id as Create left it (the grain then reads the store).
func jobOfRecord(id string, r *messages.JobRecord) (persistence.Job, bool) {
	if r == nil || r.Id != id {
		return persistence.Job{}, false
	}
	j := persistence.Job{ID: r.Id, Mode: r.Mode, Params: r.Params, Status: persistence.Status(r.Status),
		Attempts: int(r.Attempts), MaxAttempts: int(r.MaxAttempts), Priority: int(r.Priority), Tenant: r.Tenant,
		TimeoutS: int(r.TimeoutS), RunAt: ofUnixNs(r.RunAtUnixNs), CreatedAt: ofUnixNs(r.CreatedAtUnixNs),
		Labels: maps.Clone(r.Labels), IdempotencyKey: r.IdempotencyKey}
	if len(r.Params) > 0 {
		j.Params = append([]byte(nil), r.Params...)
	}
	if r.HasRetryBackoff {
		j.RetryBackoff = &persistence.RetryBackoff{BaseS: r.RetryBaseS, MaxS: r.RetryMaxS}
	}
	return j, fresh(j)
}

// fresh: the state Create gives a job — queued or scheduled, no attempt
// made. A check that the record is a new job's, not the proof that it is
// current: that is the job grain's (jobGrain.activate).
func fresh(j persistence.Job) bool {
	return j.Attempts == 0 && (j.Status == persistence.StatusQueued || j.Status == persistence.StatusScheduled) &&
		!j.CreatedAt.IsZero()
}

func unixNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func ofUnixNs(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}
