package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/paprika-hub/paprika/internal/backoff"
)

// Logs returns every log line of the job so far (GET /jobs/{id}/logs), as
// one newline-separated text.
func (c *Client) Logs(ctx context.Context, id string) (string, error) {
	resp, err := c.do(ctx, &request{
		method:     http.MethodGet,
		path:       "/jobs/" + esc(id) + "/logs",
		accept:     "text/plain",
		idempotent: true,
	})
	if err != nil {
		return "", err
	}
	defer drainClose(resp.Body)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("GET /jobs/%s/logs: read: %w", id, err)
	}
	return string(b), nil
}

// Follow streams the job's log (GET /jobs/{id}/logs?follow=1, server-sent
// events) and calls fn with each line, in order, from the first line on. It
// returns nil when the hub sends "event: done" (the job is final and every
// line was delivered), or an error when ctx ends or the hub cannot be
// reached.
//
// A dropped stream is resumed with ?follow=1&from=N, N being the lines
// received so far, so no line is lost or repeated. Reconnects that bring no
// new line count towards the client's attempt limit; any progress resets it.
// fn runs on the caller's goroutine and should return quickly.
func (c *Client) Follow(ctx context.Context, id string, fn func(line string)) error {
	var received, fruitless int
	var lastErr error
	for {
		q := url.Values{"follow": {"1"}}
		if received > 0 {
			q.Set("from", strconv.Itoa(received))
		}
		resp, err := c.do(ctx, &request{
			method:     http.MethodGet,
			path:       "/jobs/" + esc(id) + "/logs",
			query:      q,
			accept:     "text/event-stream",
			idempotent: true,
		})
		if err != nil {
			return err
		}
		got, done, err := readStream(resp, received, fn)
		drainClose(resp.Body)
		received += got
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("follow job %s: %w", id, ctx.Err())
		}
		if err == nil {
			err = io.ErrUnexpectedEOF // stream ended without "event: done"
		}
		if _, ok := errors.AsType[*APIError](err); ok {
			return fmt.Errorf("follow job %s: %w", id, err)
		}
		lastErr = err
		if got > 0 {
			fruitless = 0
		} else {
			fruitless++
		}
		if fruitless >= c.maxAttempts {
			return fmt.Errorf("follow job %s: stream dropped %d times without a new line: %w", id, fruitless, lastErr)
		}
		if err := backoff.Sleep(ctx, c.retry.Delay(fruitless)); err != nil {
			return fmt.Errorf("follow job %s: %w", id, err)
		}
	}
}

// readStream delivers the lines of one follow response. A hub that answers
// text/plain instead of an event stream sent every line so far; the first
// skip of them were delivered already, and the plain answer is complete.
func readStream(resp *http.Response, skip int, fn func(string)) (got int, done bool, err error) {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		return readPlain(resp.Body, skip, fn)
	}
	return readEvents(resp.Body, fn)
}

func readPlain(r io.Reader, skip int, fn func(string)) (int, bool, error) {
	br := bufio.NewReader(r)
	got, n := 0, 0
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			n++
			if n > skip {
				fn(strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"))
				got++
			}
		}
		if errors.Is(err, io.EOF) {
			return got, true, nil
		}
		if err != nil {
			return got, false, err
		}
	}
}

// readEvents parses server-sent events. Each "data:" field is one log line
// and is delivered as soon as it is read (the hub sends one per line; were
// several in one event, each still counts as one line, which keeps the
// resume index right). "event: done" ends the stream; "event: error" carries
// the hub's error JSON; other event types (keep-alives, status) are skipped.
func readEvents(r io.Reader, fn func(string)) (got int, done bool, err error) {
	br := bufio.NewReader(r)
	event := ""
	var errData []string
	for {
		raw, rerr := br.ReadString('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return got, false, rerr
		}
		complete := strings.HasSuffix(raw, "\n")
		line := strings.TrimSuffix(strings.TrimSuffix(raw, "\n"), "\r")
		if !complete && rerr != nil {
			// A line cut off by the end of the stream is not trusted, but a
			// final "event: done" without its newline still counts.
			return got, event == "done" || line == "event: done" || line == "event:done", nil
		}
		switch name, value := field(line); name {
		case "":
			if line == "" { // blank line: end of event
				if event == "error" {
					return got, false, errorEvent(errData)
				}
				event, errData = "", nil
			}
		case "event":
			event = value
			if event == "done" {
				return got, true, nil
			}
		case "data":
			switch event {
			case "", "message", "log":
				fn(value)
				got++
			case "error":
				errData = append(errData, value)
			}
		}
	}
}

// field splits an event-stream line into field name and value; comments
// (":...") and blank lines give an empty name.
func field(line string) (string, string) {
	if line == "" || strings.HasPrefix(line, ":") {
		return "", ""
	}
	name, value, _ := strings.Cut(line, ":")
	return name, strings.TrimPrefix(value, " ")
}

// errorEvent turns an "event: error" payload into an *APIError.
func errorEvent(data []string) error {
	body := strings.Join(data, "\n")
	resp := &http.Response{StatusCode: http.StatusInternalServerError, Body: io.NopCloser(strings.NewReader(body))}
	return decodeAPIError(resp)
}
