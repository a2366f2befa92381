// Command http-check is a worker with a job type of its own that needs no
// browser: mode "http-check" GETs a URL and reports its status, timing and
// whether the body holds a string; the response head is stored as an
// asset. See README.md for running it against `paprika up`.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/examples/internal"
	"github.com/paprika-hub/paprika/worker"
)

// Mode is the job type this worker adds.
const Mode = "http-check"

// schema is the JSON Schema of the mode's params, declared in hello: the
// hub refuses a job whose params do not match before it is queued.
//
//go:embed schema.json
var schema json.RawMessage

// maxBody bounds how much of a response is read.
const maxBody = 1 << 20

// Params are the mode's params.
type Params struct {
	URL          string `json:"url"`
	ExpectStatus int    `json:"expect_status"` // default 200
	Contains     string `json:"contains"`      // optional
	TimeoutMS    int    `json:"timeout_ms"`    // default 10000
}

// Result is the mode's result.
type Result struct {
	URL      string `json:"url"`
	Status   int    `json:"status"`
	OK       bool   `json:"ok"`
	Bytes    int    `json:"bytes"`
	Contains *bool  `json:"contains,omitempty"`
	MS       int64  `json:"ms"`
}

// check is the handler: a non-2xx answer or a missing string is a result
// (ok false), not an error, so the job does not retry a page that answers;
// a network error is a plain error, retried while max_attempts allows; a
// URL that cannot be fetched at all is permanent.
func check(ctx context.Context, j *worker.Job) (any, error) {
	var p Params
	if err := j.Decode(&p); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(p.URL, "http://") && !strings.HasPrefix(p.URL, "https://") {
		return nil, worker.Permanent(fmt.Errorf("url %q is not http(s)", p.URL))
	}
	if p.ExpectStatus == 0 {
		p.ExpectStatus = http.StatusOK
	}
	timeout := 10 * time.Second
	if p.TimeoutMS > 0 {
		timeout = time.Duration(p.TimeoutMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return nil, worker.Permanent(err)
	}
	j.Log("GET " + p.URL)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", p.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", p.URL, err)
	}
	r := Result{URL: p.URL, Status: resp.StatusCode, Bytes: len(body), MS: time.Since(start).Milliseconds()}
	r.OK = resp.StatusCode == p.ExpectStatus
	if p.Contains != "" {
		found := strings.Contains(string(body), p.Contains)
		r.Contains = &found
		r.OK = r.OK && found
	}
	j.Log(fmt.Sprintf("HTTP %d, %d bytes in %d ms, ok=%v", r.Status, r.Bytes, r.MS, r.OK))
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s\n", resp.Proto, resp.Status)
	_ = resp.Header.Write(&head)
	if err := j.Upload("response-head.txt", "text/plain", strings.NewReader(head.String())); err != nil {
		return nil, fmt.Errorf("store the response head: %w", err)
	}
	return r, nil
}

func main() {
	o, err := internal.Options(Mode, os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	o.NoBuiltins = true // this worker runs http-check only
	w, err := worker.New(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "http-check:", err)
		os.Exit(2)
	}
	w.Handle(Mode, check, worker.Schema(schema))
	os.Exit(internal.Run(Mode, w))
}
