package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/paprika-hub/paprika/persistence"
)

// txReq is one transition in a batched transaction: either a conditional
// UPDATE (query, args) whose matched-row count decides, explained by check
// when it lost, or a change apply computes from the locked row (the
// transitions that write the attempts log).
type txReq struct {
	op, id string
	query  string
	args   []any
	check  func(*persistence.Job) error
	apply  func(*persistence.Job) error
	// ride: it may wait for a trip another call leads (WithFinishWait).
	ride bool
}

type txCall = call[txReq, persistence.Job]

// condSize and mutateSize are what a transition adds to a trip: its query
// and values; a mutated row is written whole (result, attempts log).
func condSize(query string, args []any) int {
	n := len(query) + 32
	for _, a := range args {
		n += argSize(a)
	}
	return n
}

func argSize(a any) int {
	switch v := a.(type) {
	case string:
		return 2*len(v) + 2 // escaping may double it
	case []byte:
		return 2*len(v) + 2
	}
	return 32
}

const mutateRowSize = 8 << 10

// transact runs r in the next batched transaction (batch.go) and returns
// the job as r left it.
func (s *JobStore) transact(ctx context.Context, r txReq, size int) (persistence.Job, error) {
	var (
		j   persistence.Job
		err error
	)
	if r.ride {
		j, err = s.txs.ride(ctx, r, size, s.finishWait)
	} else {
		j, err = s.txs.do(ctx, r, size)
	}
	if err != nil && err == ctx.Err() { // left before its trip: nothing was written
		return persistence.Job{}, s.fail(ctx, err, "%s job %s", r.op, r.id)
	}
	return j, err
}

// runTx carries a batch of transitions in one transaction: one round trip
// when every transition is a conditional UPDATE, two when some are
// computed from their row. A deadlock victim runs again whole.
func (s *JobStore) runTx(ctx context.Context, calls []*txCall) {
	for try := 1; ; try++ {
		err := s.tryTx(ctx, calls)
		if err == nil {
			return
		}
		if len(calls) > 1 && ownFault(ctx, err) {
			// The server refused something one call asked (a value it
			// would not store): each call goes alone, to get its own answer.
			for _, c := range calls {
				s.runTx(ctx, []*txCall{c})
			}
			return
		}
		if !retryable(err) || try == maxTxTries || ctx.Err() != nil {
			for _, c := range calls {
				c.res, c.err = persistence.Job{}, s.fail(ctx, err, "%s job %s", c.req.op, c.req.id)
			}
			return
		}
	}
}

// ownFault reports whether err may be one call's own: an error the server
// answered about a statement, not a broken connection, a rolled-back
// deadlock victim or an ended trip.
func ownFault(ctx context.Context, err error) bool {
	return ctx.Err() == nil && serverErrorNumber(err) != 0 && !unavailable(err) && !retryable(err)
}

// tryTx is one try of runTx. Trip one (tripOne) is START TRANSACTION,
// each conditional UPDATE, and one read of every job of the batch — under
// FOR UPDATE when some transition needs its row — then COMMIT when nothing
// is left to write. Trip two writes the rows the computed transitions
// changed, then COMMIT. The answers are set only once the COMMIT
// succeeded; a failure leaves nothing half-written (the connection is
// rolled back or thrown away) and is returned for all.
func (s *JobStore) tryTx(ctx context.Context, calls []*txCall) (err error) {
	var cond, mut []*txCall
	for _, c := range calls {
		if c.req.apply != nil {
			mut = append(mut, c)
		} else {
			cond = append(cond, c)
		}
	}
	slices.SortStableFunc(cond, func(a, b *txCall) int { return strings.Compare(a.req.id, b.req.id) })
	ids := make([]string, 0, len(calls))
	for _, c := range calls {
		ids = append(ids, c.req.id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)

	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		if err != nil {
			discardIfOpen(conn)
		}
		_ = conn.Close()
	}()

	query, args, tokens, counted, merged := tripOne(cond, ids, len(mut) > 0, rand.Uint64())
	s.txRoundTrips.Add(1)
	s.mergedRows.Add(int64(merged))
	counts, rows, stamps, err := readTrip(ctx, conn, query, args, counted, len(ids))
	if err != nil {
		return err
	}

	// The computed transitions, in the order they came: two on one job
	// see each other, as if they had run one after the other.
	type mutResult struct {
		j   persistence.Job
		err error
	}
	mres := make([]mutResult, len(mut))
	after := make(map[string]persistence.Job, len(mut))
	for i, c := range mut {
		j, ok := after[c.req.id]
		if !ok {
			if j, ok = rows[c.req.id]; !ok {
				mres[i].err = fmt.Errorf("%s job %s: %w", c.req.op, c.req.id, persistence.ErrNotFound)
				continue
			}
		}
		j = persistence.CloneJob(j)
		if err := c.req.apply(&j); err != nil {
			mres[i].err = err
			continue
		}
		if len(j.Reason) > maxReasonLen {
			mres[i].err = fmt.Errorf("%s job %s: reason is %d bytes, at most %d", c.req.op, c.req.id, len(j.Reason), maxReasonLen)
			continue
		}
		j.StartedAt, j.FinishedAt = micro(j.StartedAt), micro(j.FinishedAt)
		j.Error = clipError(j.Error)
		if _, err := mutateArgs(&j); err != nil { // normalizes j as written
			mres[i].err = fmt.Errorf("%s job %s: %w", c.req.op, c.req.id, err)
			continue
		}
		after[c.req.id] = j
		mres[i].j = j
	}
	if len(mut) > 0 {
		if err := s.writeRows(ctx, conn, after); err != nil {
			return err
		}
	}

	for i, c := range cond {
		j, found := rows[c.req.id]
		switch {
		case !found:
			c.res, c.err = persistence.Job{}, fmt.Errorf("%s job %s: %w", c.req.op, c.req.id, persistence.ErrNotFound)
		case counted[i] && counts[i] > 0, !counted[i] && stamps[c.req.id] == tokens[i]:
			c.res, c.err = j, nil
		default:
			c.res = persistence.Job{}
			if c.err = c.req.check(&j); c.err == nil {
				c.err = fmt.Errorf("%s job %s: changed concurrently: %w", c.req.op, c.req.id, persistence.ErrConflict)
			}
		}
	}
	for i, c := range mut {
		c.res, c.err = mres[i].j, mres[i].err
	}
	return nil
}

// updateJobsSet begins every conditional UPDATE of a transition; tripOne
// stamps the row's op_token after it.
const updateJobsSet = "UPDATE jobs SET "

// tripOne is trip one's query and arguments: START TRANSACTION, the
// conditional UPDATEs of cond (in id order, so that hubs batching the
// same jobs lock them in one order), the read of ids (FOR UPDATE when
// lock, else followed by COMMIT).
//
// Each UPDATE stamps its row with a token of its own (op_token, drawn from
// seed), which the read returns: a row that carries a call's token is one
// that call's UPDATE matched. Nothing else can have written the row
// between the two — the UPDATE holds its lock until the COMMIT — and a
// row it did not match carries no token of this trip. That saves a SELECT
// ROW_COUNT() after each UPDATE, a statement with a result set (four
// UPDATEs a trip: 0.81× the server's CPU per trip without them). A job
// with two conditional UPDATEs in one batch keeps only the later's token,
// so those two (and a query that is not an UPDATE of jobs) are counted
// with a ROW_COUNT() instead: counted[i] says which, tokens[i] is the
// others' token. A run of stamped UPDATEs of one query goes as one
// statement (merge.go).
func tripOne(cond []*txCall, ids []string, lock bool, seed uint64) (query string, args []any, tokens []uint64, counted []bool, merged int) {
	var q strings.Builder
	size, nargs := 160+len(jobColumns)+4*len(ids), len(ids)
	for _, c := range cond {
		// Merged (merge.go), a row's token and each value that differs by
		// row go with its id: at most twice its arguments, and one more.
		size += len(c.req.query) + 40 + 16*len(c.req.args)
		nargs += 3 + 2*len(c.req.args)
	}
	q.Grow(size) // one allocation, not one per doubling
	args = make([]any, 0, nargs)
	tokens, counted = make([]uint64, len(cond)), make([]bool, len(cond))
	base := seed | 1 // odd tokens: never the column's default 0, distinct within the trip
	q.WriteString("START TRANSACTION")
	stamps := func(i int) bool {
		id := cond[i].req.id
		return strings.HasPrefix(cond[i].req.query, updateJobsSet) &&
			(i == 0 || cond[i-1].req.id != id) && (i+1 == len(cond) || cond[i+1].req.id != id)
	}
	for i := 0; i < len(cond); {
		c := cond[i]
		q.WriteString("; ")
		if !stamps(i) {
			counted[i] = true
			q.WriteString(c.req.query)
			q.WriteString("; SELECT ROW_COUNT()")
			args = append(args, c.req.args...)
			i++
			continue
		}
		// The stamped UPDATEs of this one's query that follow it (on
		// distinct jobs, in id order) go with it as one statement.
		end := i + 1
		sh := mergeable[c.req.query]
		fits := func(k int) bool { return len(cond[k].req.args) == sh.nargs }
		for sh != nil && fits(i) && end < len(cond) && cond[end].req.query == c.req.query && stamps(end) && fits(end) {
			end++
		}
		for k := i; k < end; k++ {
			tokens[k] = base + 2*uint64(k)
		}
		if end-i > 1 {
			args = writeMerged(&q, args, sh, cond[i:end], tokens[i:end])
			merged += end - i
			i = end
			continue
		}
		q.WriteString(updateJobsSet + "op_token = ?, ")
		q.WriteString(strings.TrimPrefix(c.req.query, updateJobsSet))
		args = append(args, tokens[i])
		args = append(args, c.req.args...)
		i++
	}
	q.WriteString("; SELECT " + jobColumns + ", op_token FROM jobs WHERE id IN (?")
	for range len(ids) - 1 {
		q.WriteString(", ?")
	}
	q.WriteString(")")
	for _, id := range ids {
		args = append(args, id)
	}
	if lock {
		q.WriteString(" FOR UPDATE")
	} else {
		q.WriteString("; COMMIT")
	}
	return q.String(), args, tokens, counted, merged
}

// readTrip sends trip one and reads its answers: the matched-row count of
// each conditional UPDATE counted[i] says has one (the others' are 0),
// then the jobs read, by id, with their op_token; then whatever follows
// (the COMMIT's answer). jobs is how many the read may return.
func readTrip(ctx context.Context, conn *sql.Conn, query string, args []any, counted []bool, jobs int) ([]int64, map[string]persistence.Job, map[string]uint64, error) {
	rs, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rs.Close()
	counts := make([]int64, len(counted))
	sets := 0 // result sets read
	for i := range counts {
		if !counted[i] {
			continue
		}
		if sets > 0 && !rs.NextResultSet() {
			return nil, nil, nil, fmt.Errorf("row count: %w", rowsErr(rs))
		}
		sets++
		if !rs.Next() {
			return nil, nil, nil, fmt.Errorf("row count: %w", rowsErr(rs))
		}
		if err := rs.Scan(&counts[i]); err != nil {
			return nil, nil, nil, fmt.Errorf("row count: %w", err)
		}
	}
	if sets > 0 && !rs.NextResultSet() {
		return nil, nil, nil, fmt.Errorf("read: %w", rowsErr(rs))
	}
	// Sized for the batch's jobs: a row is some hundred bytes, and maps
	// grown row by row copied them.
	rows, stamps := make(map[string]persistence.Job, jobs), make(map[string]uint64, jobs)
	var token uint64
	scan := newJobScanner(&token)
	for rs.Next() {
		j, err := scan.scan(rs)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read: %w", err)
		}
		rows[j.ID], stamps[j.ID] = j, token
	}
	if err := rs.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("read: %w", err)
	}
	for rs.NextResultSet() {
	}
	if err := rs.Err(); err != nil {
		// As for a lost COMMIT answer anywhere: the caller reads the job
		// again before deciding.
		return nil, nil, nil, fmt.Errorf("commit: %w", err)
	}
	return counts, rows, stamps, nil
}

// writeRows is trip two: every changed row written whole, then COMMIT. A
// trip that would outgrow maxBatchBytes is cut into several statements'
// worth, all in the one transaction.
func (s *JobStore) writeRows(ctx context.Context, conn *sql.Conn, after map[string]persistence.Job) error {
	ids := make([]string, 0, len(after))
	for id := range after {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var (
		q    strings.Builder
		args []any
		size int
	)
	flush := func(final string) error {
		if final != "" {
			if q.Len() > 0 {
				q.WriteString("; ")
			}
			q.WriteString(final)
		}
		if q.Len() == 0 {
			return nil
		}
		s.txRoundTrips.Add(1)
		if _, err := conn.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		q.Reset()
		args, size = args[:0], 0
		return nil
	}
	for _, id := range ids {
		j := after[id]
		a, err := mutateArgs(&j)
		if err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
		n := condSize(mutateSQL, a)
		if size > 0 && size+n > maxBatchBytes {
			if err := flush(""); err != nil {
				return err
			}
		}
		if q.Len() > 0 {
			q.WriteString("; ")
		}
		q.WriteString(mutateSQL)
		args = append(append(args, a...), id)
		size += n
	}
	return flush("COMMIT")
}
