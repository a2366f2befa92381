package hub

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// TestRetriesLandAtTheirBackoff: a noop job failing with job_error is tried
// max_attempts times; each retry starts its backoff (base_s·n⁴ ± 10 %)
// after the attempt before ended, and the attempts log has every attempt.
func TestRetriesLandAtTheirBackoff(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wa", 1)
	j := submit(t, h.URL(), `{"mode":"noop","params":{"fail":true},"max_attempts":3,"retry_backoff":{"base_s":0.1,"max_s":1}}`)
	require.Equal(t, &persistence.RetryBackoff{BaseS: 0.1, MaxS: 1}, j.RetryBackoff)
	sawScheduled := false
	require.Eventually(t, func() bool {
		g := getJob(t, h.URL(), j.ID)
		if g.Status == persistence.StatusScheduled {
			sawScheduled = true
			require.False(t, g.RunAt.IsZero(), "a scheduled retry shows its run_at")
		}
		return g.Status.Final()
	}, 20*time.Second, 5*time.Millisecond)
	require.True(t, sawScheduled, "a retry waiting for its backoff is scheduled")
	f := getJob(t, h.URL(), j.ID)
	require.Equal(t, persistence.StatusFailed, f.Status)
	require.Equal(t, persistence.ReasonJobError, f.Reason)
	require.Equal(t, 3, f.Attempts)
	require.Len(t, f.AttemptsLog, 3)
	var retries dto.Metric
	require.NoError(t, h.deps.Metrics.JobRetries.Write(&retries))
	require.Equal(t, 2.0, retries.GetCounter().GetValue(), "two retries counted")
	for i, a := range f.AttemptsLog {
		require.Equal(t, i+1, a.Attempt)
		require.Equal(t, "wa", a.WorkerID)
		require.NotEmpty(t, a.Lane)
		require.Equal(t, h.deps.HubID, a.Hub)
		require.Equal(t, persistence.StatusFailed, a.Status)
		require.Equal(t, persistence.ReasonJobError, a.Reason)
		require.Contains(t, a.Error, "fail=true")
		require.False(t, a.StartedAt.Before(a.QueuedAt), "attempt %d started before it was queued: %+v", a.Attempt, f.AttemptsLog)
		require.False(t, a.FinishedAt.Before(a.StartedAt))
		if i == 0 {
			continue
		}
		prev := f.AttemptsLog[i-1]
		want := min(time.Duration(0.1*float64(i*i*i*i)*float64(time.Second)), time.Second) // min(base_s·n⁴, max_s), n = the failed attempt
		wait := a.QueuedAt.Sub(prev.FinishedAt)
		require.InDelta(t, want.Seconds(), wait.Seconds(), want.Seconds()*persistence.RetryJitter+0.002,
			"retry %d queued %s after attempt %d ended, want %s ± 10%%", a.Attempt, wait, prev.Attempt, want)
	}
}

// TestFinalFailuresAreNotRetried: a job_error with attempts
// left is retried, but a canceled job or one past its deadline is not;
// max_attempts 1 (the default) fails at once.
func TestFinalFailuresAreNotRetried(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wa", 2)
	once := submit(t, h.URL(), `{"mode":"noop","params":{"fail":true}}`)
	f := waitFinal(t, h.URL(), once.ID, 10*time.Second)
	require.Equal(t, persistence.StatusFailed, f.Status)
	require.Equal(t, 1, f.Attempts)
	require.Len(t, f.AttemptsLog, 1)

	// A deadline is final: the attempt is not retried though attempts remain.
	// timeout_s counts from the submit: 3 s leave a loaded machine time to
	// start the attempt, which must be running before the deadline ends it.
	slow := submit(t, h.URL(), `{"mode":"noop","params":{"sleep_ms":10000},"timeout_s":3,"max_attempts":3,"retry_backoff":{"base_s":0.01,"max_s":0.01}}`)
	require.Eventually(t, func() bool { return getJob(t, h.URL(), slow.ID).Status == persistence.StatusRunning },
		3*time.Second, 10*time.Millisecond, "the attempt starts before its deadline")
	f = waitFinal(t, h.URL(), slow.ID, 15*time.Second)
	require.Equal(t, persistence.ReasonDeadlineExceeded, f.Reason)
	require.Equal(t, 1, f.Attempts)
}

// TestPermanentFailureIsNotRetried: a job_failed the worker calls
// permanent (worker.Permanent) is final though attempts remain; the same
// report without permanent is retried.
func TestPermanentFailureIsNotRetried(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wa", 2)
	report := func(permanent bool) persistence.Job {
		j := submit(t, h.URL(), `{"mode":"noop","params":{"sleep_ms":60000},"max_attempts":3,"retry_backoff":{"base_s":30,"max_s":60}}`)
		require.Eventually(t, func() bool { return getJob(t, h.URL(), j.ID).Lane != "" }, 10*time.Second, 10*time.Millisecond)
		// The worker's own report, as its link relays a job_failed.
		r, err := grains.Call(h.member.Cluster, j.ID, grains.KindJob, &messages.JobFinished{WorkerId: "wa", Attempt: 1,
			Reason: persistence.ReasonJobError, Error: "handler said no", Permanent: permanent}, 5*time.Second)
		require.NoError(t, err)
		require.True(t, r.Ok, r.Message)
		return getJob(t, h.URL(), j.ID)
	}
	p := report(true)
	require.Equal(t, persistence.StatusFailed, p.Status)
	require.Equal(t, 1, p.Attempts)
	require.Len(t, p.AttemptsLog, 1)
	require.Equal(t, "handler said no", p.AttemptsLog[0].Error)

	r := report(false)
	require.Equal(t, persistence.StatusScheduled, r.Status, "a plain job_error with attempts left waits for its retry")
	require.InDelta(t, 30, r.RunAt.Sub(r.AttemptsLog[0].FinishedAt).Seconds(), 3.01)
	_, b := do(t, "POST", h.URL()+"/jobs/"+r.ID+"/cancel", "")
	require.Equal(t, persistence.StatusCanceled, waitFinal(t, h.URL(), r.ID, 5*time.Second).Status, string(b))
}

// TestDelayedJobsRunAtTheirTime: delay_s and run_at hold a job scheduled
// until its time, then it is placed within 100 ms (a lane is free);
// jobs run in the order of their times, not of their submission.
func TestDelayedJobsRunAtTheirTime(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wa", 2)
	at := time.Now().Add(1500 * time.Millisecond).UTC()
	late := submit(t, h.URL(), `{"mode":"noop","run_at":"`+at.Format(time.RFC3339Nano)+`"}`)
	early := submit(t, h.URL(), `{"mode":"noop","delay_s":0.6}`)
	now := submit(t, h.URL(), `{"mode":"noop","run_at":"2001-01-01T00:00:00Z"}`) // past = now
	require.Equal(t, persistence.StatusScheduled, late.Status)
	require.Equal(t, persistence.StatusScheduled, early.Status)
	require.True(t, late.RunAt.Equal(at), "run_at %s, want %s", late.RunAt, at)
	require.NotEqual(t, persistence.StatusScheduled, now.Status)

	st, b := do(t, "GET", h.URL()+"/jobs?status=scheduled", "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.Contains(t, string(b), late.ID)
	require.Contains(t, string(b), early.ID)

	for _, d := range []persistence.Job{early, late} {
		f := waitFinal(t, h.URL(), d.ID, 10*time.Second)
		require.Equal(t, persistence.StatusSucceeded, f.Status)
		require.False(t, f.StartedAt.Before(d.RunAt), "job %s started %s before its run_at %s", d.ID, f.StartedAt, d.RunAt)
		// How soon after run_at it starts is a speed goal, measured by
		// BenchmarkDelayedLateness, not asserted here.
		// timeout_s counts from run_at.
		require.True(t, f.Deadline().Equal(d.RunAt.Add(time.Duration(d.TimeoutS)*time.Second)))
	}
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, h.URL(), now.ID, 10*time.Second).Status)
}

// TestDelayValidation: both run_at and delay_s, out-of-range values and a
// bad retry_backoff are 400s naming the field.
func TestDelayValidation(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	far := time.Now().Add(31 * 24 * time.Hour).UTC().Format(time.RFC3339)
	for body, field := range map[string]string{
		`{"mode":"noop","delay_s":1,"run_at":"2030-01-01T00:00:00Z"}`: "run_at",
		`{"mode":"noop","delay_s":-1}`:                                "delay_s",
		`{"mode":"noop","delay_s":9999999}`:                           "delay_s",
		`{"mode":"noop","run_at":"` + far + `"}`:                      "run_at",
		`{"mode":"noop","retry_backoff":{"base_s":0,"max_s":1}}`:      "retry_backoff.base_s",
		`{"mode":"noop","retry_backoff":{"base_s":2,"max_s":1}}`:      "retry_backoff.max_s",
	} {
		st, b := do(t, "POST", h.URL()+"/jobs", body)
		require.Equal(t, http.StatusBadRequest, st, body)
		require.Equal(t, field, decodeAPIError(t, b).Error.Field, body)
	}
	st, b := do(t, "POST", h.URL()+"/jobs", `{"mode":"noop","run_at":"tomorrow"}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
}

// TestRetryEndpoint: POST /jobs/{id}/retry runs a failed job again under a
// new attempt (max_attempts grows by one); a job that is not failed is a
// 409 not_failed, an unknown one a 404.
func TestRetryEndpoint(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wa", 1)
	j := submit(t, h.URL(), `{"mode":"noop","params":{"fail":true}}`)
	require.Equal(t, persistence.StatusFailed, waitFinal(t, h.URL(), j.ID, 10*time.Second).Status)
	st, b := do(t, "POST", h.URL()+"/jobs/"+j.ID+"/retry", "")
	require.Equal(t, http.StatusOK, st, string(b))
	f := waitFinal(t, h.URL(), j.ID, 10*time.Second)
	require.Equal(t, persistence.StatusFailed, f.Status)
	require.Equal(t, 2, f.Attempts)
	require.Equal(t, 2, f.MaxAttempts)
	require.Len(t, f.AttemptsLog, 2)

	ok := submit(t, h.URL(), `{"mode":"noop"}`)
	waitFinal(t, h.URL(), ok.ID, 10*time.Second)
	st, b = do(t, "POST", h.URL()+"/jobs/"+ok.ID+"/retry", "")
	require.Equal(t, http.StatusConflict, st, string(b))
	require.Equal(t, "not_failed", decodeAPIError(t, b).Error.Code)
	st, _ = do(t, "POST", h.URL()+"/jobs/nosuchjob/retry", "")
	require.Equal(t, http.StatusNotFound, st)
}

// TestDelayedJobSurvivesAHubRestart: a job scheduled when the hub stops
// is held by the next hub's scheduler (rebuilt from the store) and runs
// at its time.
func TestDelayedJobSurvivesAHubRestart(t *testing.T) {
	cfg := testConfig(t)
	h1 := startTestHub(t, cfg)
	j := submit(t, h1.URL(), `{"mode":"noop","delay_s":2}`)
	require.NoError(t, h1.Stop(context.Background()))
	h2 := startTestHub(t, cfg)
	startAgent(t, h2.URL(), "wa", 1)
	f := waitFinal(t, h2.URL(), j.ID, 15*time.Second)
	require.Equal(t, persistence.StatusSucceeded, f.Status)
	require.False(t, f.StartedAt.Before(j.RunAt))
}

// TestRetriedJobKeepsEveryAttemptsLog: the lines of each attempt of a
// retried job are stored one after the other, and the log ends (a
// follower's done) only when the last attempt has failed for good.
func TestRetriedJobKeepsEveryAttemptsLog(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	startAgent(t, h.URL(), "wl", 1)
	j := submit(t, h.URL(), `{"mode":"noop","params":{"lines":3,"fail":true},"max_attempts":3,"retry_backoff":{"base_s":0.05,"max_s":0.2}}`)
	f := waitFinal(t, h.URL(), j.ID, 20*time.Second)
	require.Equal(t, persistence.StatusFailed, f.Status)
	require.Equal(t, 3, f.Attempts)
	var body string
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", h.URL()+"/jobs/"+j.ID+"/logs", "")
		body = string(b)
		return st == http.StatusOK && strings.Count(body, "\n") >= 9
	}, 10*time.Second, 20*time.Millisecond, "three attempts of three lines each; got %q", body)
	require.Equal(t, 9, strings.Count(body, "\n"), "no line twice: %q", body)

	// The follow ends: the log was closed after the last attempt.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", h.URL()+"/jobs/"+j.ID+"/logs?follow=1", nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	all, err := io.ReadAll(res.Body)
	require.NoError(t, err, "the follow ended by itself")
	require.Contains(t, string(all), "event: done")
}
