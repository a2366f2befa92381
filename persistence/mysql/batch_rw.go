package mysql

import (
	"context"
	"strings"

	"github.com/paprika-hub/paprika/persistence"
)

type getCall = call[string, persistence.Job]

// runGets reads a batch of jobs in one SELECT … WHERE id IN: each call
// gets the job as committed when the trip ran (after the call was made),
// as a read of its own would.
func (s *JobStore) runGets(ctx context.Context, calls []*getCall) {
	ids := make([]any, 0, len(calls))
	seen := make(map[string]bool, len(calls))
	for _, c := range calls {
		if !seen[c.req] {
			seen[c.req] = true
			ids = append(ids, c.req)
		}
	}
	found, err := func() (map[string]persistence.Job, error) {
		rows, err := s.db.QueryContext(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id IN (?"+strings.Repeat(", ?", len(ids)-1)+")", ids...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		found := make(map[string]persistence.Job, len(ids))
		scan := newJobScanner(nil)
		for rows.Next() {
			j, err := scan.scan(rows)
			if err != nil {
				return nil, err
			}
			found[j.ID] = j
		}
		return found, rows.Err()
	}()
	for _, c := range calls {
		j, ok := found[c.req]
		switch {
		case err != nil:
			c.err = err
		case !ok:
			c.err = persistence.ErrNotFound
		default:
			// Each caller owns its copy: nothing is shared between answers.
			c.res = persistence.CloneJob(j)
		}
	}
}

// createReq is a prepared new job and its INSERT values.
type createReq struct {
	j    persistence.Job
	args []any
}

type createResult struct {
	j       persistence.Job
	created bool
}

type createCall = call[createReq, createResult]

// runCreates stores a batch of new jobs with one multi-row INSERT, atomic
// like any statement: all rows or none. When the server refuses it for
// one row's sake (a duplicate key: an idempotent repeat, a taken id) every
// job of the batch goes again on its own, so each caller gets the answer
// its own INSERT would have had.
func (s *JobStore) runCreates(ctx context.Context, calls []*createCall) {
	if len(calls) > 1 {
		row := "(?" + strings.Repeat(", ?", len(calls[0].req.args)-1) + ", UTC_TIMESTAMP(6))"
		var q strings.Builder
		q.WriteString(insertJobPrefix)
		args := make([]any, 0, len(calls)*len(calls[0].req.args))
		for i, c := range calls {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(row)
			args = append(args, c.req.args...)
		}
		var err error
		for try := 1; ; try++ {
			_, err = s.db.ExecContext(ctx, q.String(), args...)
			if err == nil || !retryable(err) || try == maxTxTries || ctx.Err() != nil {
				break
			}
		}
		switch {
		case err == nil:
			for _, c := range calls {
				c.res = createResult{j: c.req.j, created: true}
			}
			return
		case !ownFault(ctx, err):
			for _, c := range calls {
				c.err = s.fail(ctx, err, "create job %s", c.req.j.ID)
			}
			return
		}
	}
	for _, c := range calls {
		j, created, err := s.insertOne(ctx, c.req.j, c.req.args)
		c.res, c.err = createResult{j: j, created: created}, err
	}
}

// insertJobPrefix is insertJobSQL without its row of values.
const insertJobPrefix = "INSERT INTO jobs (" + jobColumns + ", updated_at) VALUES "

// createSize is what a new job adds to a multi-row INSERT.
func createSize(args []any) int {
	n := 64
	for _, a := range args {
		n += argSize(a)
	}
	return n
}
