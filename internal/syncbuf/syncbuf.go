// Package syncbuf is a bytes.Buffer that several goroutines may write and
// read: the sink tests give loggers and child processes that outlive the
// call that started them.
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is safe for concurrent Write and String; the zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// LastLines is the last n lines of s: the tail a test prints of a log when
// it fails.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
