package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkSubmitNoop is one POST /jobs of a no-op job through the API's
// handler chain, against a backend that stores nothing: the API's own cost
// per submission.
func BenchmarkSubmitNoop(b *testing.B) {
	s := New(limitsBackend{}, Options{})
	const body = `{"mode":"noop","timeout_s":600,"max_attempts":1}`
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/jobs", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusCreated {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}
