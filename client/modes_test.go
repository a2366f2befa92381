package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type diffParams struct {
	URL       string  `json:"url"`
	Threshold float64 `json:"threshold"`
}

func TestSubmitJSON(t *testing.T) {
	var got map[string]any
	var key string
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/jobs", r.URL.Path)
		key = r.Header.Get("Idempotency-Key")
		b, _ := io.ReadAll(r.Body)
		got = nil
		assert.NoError(t, json.Unmarshal(b, &got))
		writeJSON(w, http.StatusCreated, Job{ID: "J1", Mode: "pdf-diff", Status: StatusQueued})
	})
	j, err := c.SubmitJSON(context.Background(), "pdf-diff", diffParams{URL: "https://a", Threshold: 0.25},
		JobLabels(map[string]string{"team": "qa"}), JobPriority(7), JobRequireCapacity(), JobIdempotencyKey("k1"),
		JobMaxAttempts(3), JobTimeoutS(60))
	require.NoError(t, err)
	require.Equal(t, "J1", j.ID)
	require.Equal(t, "k1", key)
	require.Equal(t, map[string]any{
		"mode": "pdf-diff", "params": map[string]any{"url": "https://a", "threshold": 0.25},
		"labels": map[string]any{"team": "qa"}, "priority": 7.0, "require_capacity": true,
		"max_attempts": 3.0, "timeout_s": 60.0,
	}, got)

	_, err = c.SubmitJSON(context.Background(), "pdf-diff", []int{1})
	require.ErrorContains(t, err, "JSON object")
	_, err = c.SubmitJSON(context.Background(), "pdf-diff", nil) // no params at all
	require.NoError(t, err)
	require.NotContains(t, got, "params")
}

func TestModesAndListFilters(t *testing.T) {
	c, _ := setup(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/modes":
			_, _ = io.WriteString(w, `{"modes":[{"name":"pdf-diff","lane":"chromium","schema":{"type":"object"},"workers":2,"lanes":8}]}`)
		case "/jobs":
			q := r.URL.Query()
			assert.Equal(t, "pdf-diff", q.Get("mode"))
			assert.Equal(t, "w1", q.Get("worker"))
			assert.Equal(t, "job_error", q.Get("reason"))
			assert.Equal(t, "failed", q.Get("status"))
			assert.Equal(t, []string{"a=1", "b=x=y"}, q["label"])
			writeJSON(w, http.StatusOK, Page{})
		}
	})
	ms, err := c.Modes(context.Background())
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Equal(t, "pdf-diff", ms[0].Name)
	require.Equal(t, 8, ms[0].Lanes)
	require.JSONEq(t, `{"type":"object"}`, string(ms[0].Schema))
	_, err = c.List(context.Background(), ListOptions{Status: StatusFailed, Mode: "pdf-diff", WorkerID: "w1",
		Reason: "job_error", Labels: map[string]string{"b": "x=y", "a": "1"}})
	require.NoError(t, err)
}
