package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/internal/syncbuf"
	"github.com/paprika-hub/paprika/messages"
	"github.com/paprika-hub/paprika/persistence"
)

// repeatedKeys lists the keys that occur more than once in one JSON object
// of line, at any depth (slog groups are nested objects).
func repeatedKeys(line string) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	var repeated []string
	var object func() error
	var value func() error
	object = func() error { // after the '{'
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			if seen[key] {
				repeated = append(repeated, key)
			}
			seen[key] = true
			if err := value(); err != nil {
				return err
			}
		}
		_, err := dec.Token() // '}'
		return err
	}
	value = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			return object()
		case json.Delim('['):
			for dec.More() {
				if err := value(); err != nil {
					return err
				}
			}
			_, err := dec.Token() // ']'
			return err
		}
		return nil
	}
	if err := value(); err != nil {
		return nil, err
	}
	return repeated, nil
}

func TestRepeatedKeys(t *testing.T) {
	t.Parallel()
	got, err := repeatedKeys(`{"a":1,"b":{"c":[{"d":1,"d":2}],"c2":2},"a":3,"e":[1,{"f":{}}]}`)
	require.NoError(t, err)
	require.Equal(t, []string{"d", "a"}, got)
	got, err = repeatedKeys(`{"msg":"x","hub_id":"h","g":{"hub_id":"h"}}`)
	require.NoError(t, err)
	require.Empty(t, got, "the same key in another group is another key")
}

// Every line a hub and its actors log carries each key once: the hub's
// logger has hub_id, so no actor adds it again; the agent's has worker_id.
func TestLogLinesHaveEachKeyOnce(t *testing.T) {
	var hubOut, agentOut syncbuf.Buffer
	jsonLog := func(w io.Writer) *slog.Logger {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("redrive.disable", "true")) // the reconciler warns about it
	h, err := New(cfg, jsonLog(&hubOut))
	require.NoError(t, err)
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	url := h.URL()

	// A worker grain, its connection, the scheduler, a job grain and its log
	// stream: an agent runs a noop job with log lines.
	a, err := agent.New(agent.Config{HubURLs: []string{url}, ID: "w-keys", Lanes: 1, Logger: jsonLog(&agentOut)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	job := submit(t, url, `{"mode":"noop","params":{"lines":3}}`)
	require.Equal(t, persistence.StatusSucceeded, waitFinal(t, url, job.ID, 20*time.Second).Status)

	cancel()
	require.NoError(t, <-ran)

	// A session grain, and a log stream that warns: a hand-driven worker
	// with a chromium lane opens a session and skips a log line.
	l := dialRawLinkDrivers(t, url, "w-keys-s", 2, "chromium") // a lane for the session, one for the job
	frames := make(chan messages.Frame, 64)
	go func() {
		for f := range l.frames {
			frames <- f
		}
		close(frames)
	}()
	answer := func(f messages.Frame) {
		switch f.Type {
		case messages.TypeSessionCommand:
			l.send(messages.Frame{Type: messages.TypeSessionResult, SessionID: f.SessionID, CommandID: f.CommandID,
				OK: true, Result: json.RawMessage(`{"lane":"chromium://w-keys-s/lane/0"}`)})
		case messages.TypeAssignJob:
			l.send(messages.Frame{Type: messages.TypeJobStarted, JobID: f.JobID, Attempt: f.Attempt, Lane: "sim://w-keys-s/lane/0"})
			l.send(messages.Frame{Type: messages.TypeJobLog, JobID: f.JobID, Attempt: f.Attempt, Seq: 5, Line: "after a gap"})
		}
	}
	opened := make(chan int, 1)
	go func() {
		st, _ := do(t, "POST", url+"/sessions", `{"idle_timeout_s":60}`)
		opened <- st
	}()
	answer(<-frames)
	require.Equal(t, http.StatusCreated, <-opened)
	gap := submit(t, url, `{"mode":"noop"}`)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(hubOut.String(), "log line sequence gap") {
		require.True(t, time.Now().Before(deadline), "job %s: no gap warning", gap.ID)
		select {
		case f := <-frames:
			answer(f)
		case <-time.After(20 * time.Millisecond):
		}
	}

	check := func(name, out string, key string) {
		t.Helper()
		lines, withKey := 0, 0
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			lines++
			if strings.Contains(line, `"`+key+`":`) {
				withKey++
			}
			rep, err := repeatedKeys(line)
			require.NoError(t, err, "%s: %s", name, line)
			require.Empty(t, rep, "%s log line with a key twice: %s", name, line)
		}
		require.NoError(t, sc.Err())
		require.Positive(t, withKey, "%s: no line has %s; %d lines:\n%s", name, key, lines, out)
	}
	hubLog := hubOut.String()
	for _, actor := range []string{`"actor":"scheduler"`, `"actor":"reconciler"`, `"session open"`, `"job final"`,
		`"log line sequence gap"`, `"worker connected"`} {
		require.Contains(t, hubLog, actor, "the actors logged nothing to check")
	}
	check("hub", hubLog, "hub_id")
	check("agent", agentOut.String(), "worker_id")
}
