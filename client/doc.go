// Package client is the Go SDK for the Paprika hub HTTP API (API.md, "HTTP
// API"): submit jobs, read and follow their logs, wait for them, fetch their
// assets, look at and steer the fleet, and drive interactive browser
// sessions (CreateSession, Command with Navigate, Click, ..., CloseSession;
// a session's CDPURL lets a DevTools client such as chromedp connect
// through the hub).
//
//	c, err := client.New([]string{"http://hub1:8080", "http://hub2:8080"},
//		client.WithToken(os.Getenv("PAPRIKA_API_TOKEN")))
//	job, err := c.Submit(ctx, client.SubmitRequest{Mode: client.ModeNoop}, "")
//	err = c.Follow(ctx, job.ID, func(line string) { fmt.Println(line) })
//	job, err = c.Wait(ctx, job.ID)
//
// Errors the hub answers with are *APIError (status, code, message), wrapped
// with the request that failed. Reliability: any hub answers for any job, so
// on a connection error the client moves to the next base URL at once, and a
// 503 is retried after its Retry-After (bounded), with jittered backoff and a
// bounded number of attempts. A request that may have reached a hub is sent
// again only when doing so is safe: reads, status PATCHes, and POST /jobs
// with an Idempotency-Key — which Submit always sends, generating one when
// the caller gives none. Follow resumes a dropped log stream from the number
// of lines already received (?from=N), so no line is lost or repeated.
package client
