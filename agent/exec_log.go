package agent

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// execLog appends "start|end worker_id job_id attempt unix_nanos" lines to
// Config.ExecLog: tests prove from it that no job ran twice and that no
// worker ran more jobs at once than it has lanes. Each line is one write(2)
// on an O_APPEND file, so several agents may share one file.
type execLog struct {
	mu sync.Mutex
	f  *os.File // nil when no exec log is configured
}

func openExecLog(path string) (*execLog, error) {
	if path == "" {
		return &execLog{}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open exec log: %w", err)
	}
	return &execLog{f: f}, nil
}

// record notes that an attempt of a job starts or ends executing.
func (l *execLog) record(event, workerID, jobID string, attempt int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	line := fmt.Sprintf("%s %s %s %d %d\n", event, workerID, jobID, attempt, time.Now().UnixNano())
	if _, err := l.f.WriteString(line); err != nil {
		return fmt.Errorf("write exec log: %w", err)
	}
	return nil
}

// close closes the file; later records are dropped.
func (l *execLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("close exec log: %w", err)
	}
	return nil
}
