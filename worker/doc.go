// Package worker is the library for Paprika workers with job types of
// their own: register a Handler per mode, and the worker links to the
// hubs, declares its modes in hello and runs the jobs the hub assigns
// under the guarantees built-in jobs have — at most Options.Lanes at once,
// deadlines and cancel_job through the handler's context, frames kept and
// re-sent across a lost link until the hub acknowledges them, exactly one
// report per attempt, retries per max_attempts.
//
//	w, err := worker.New(worker.Options{Hubs: []string{"http://127.0.0.1:8080"}, ID: "w1", Lanes: 4, Token: tok})
//	if err != nil { ... }
//	w.Handle("http-check", func(ctx context.Context, j *worker.Job) (any, error) {
//		var p struct{ URL string `json:"url"` }
//		if err := j.Decode(&p); err != nil {
//			return nil, err // bad params: permanent, never retried
//		}
//		j.Log("checking " + p.URL)
//		...
//		return map[string]any{"status": code}, nil
//	}, worker.Schema(schema))
//	err = w.Run(ctx) // until ctx ends, then drains
//
// `paprika worker` is this library with the built-in modes (noop, and
// fetch and macro on a chromium driver) registered as handlers through
// the same Handle; New registers them unless Options.NoBuiltins.
//
// What a handler can count on:
//
//   - Its context ends when the hub cancels the job (cancel_job), when the
//     job's deadline passes, and when the worker stops (after
//     Agent.StopTimeout). The attempt is then reported with that reason
//     (canceled, deadline_exceeded, worker_lost) whatever it returns.
//   - A returned error fails the attempt with reason job_error; the hub
//     retries it while max_attempts allows. Permanent(err) fails it for
//     good (job_failed with permanent true). An error from Job.Lane keeps
//     its lane_error reason.
//   - A panic fails the attempt with job_error (the panic's message is the
//     error) and the worker keeps serving.
//   - A handler that ignores its context is waited for Options.AbandonAfter
//     after the context ended; then the attempt is reported failed and
//     whatever the handler returns later is dropped (the hub fences stale
//     attempts too). Its lane slot stays taken — and counted in the
//     heartbeat's in_flight — until the handler really returns, so the
//     worker never runs more than Lanes handlers at once and a browser lane
//     is never shared with the next job.
//   - The result is any JSON-encodable value; the assets are those stored
//     with Job.Upload.
package worker
