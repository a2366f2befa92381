package mysql_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/mysql"
)

// TestMergedTransitionsKeepTheirOwnAnswers: claims of several jobs and
// ends of several others wait together behind a trip held on a row
// lock, then go in one trip, each kind as one merged UPDATE (against the
// real server). Each call still gets its own answer: a claim of a job
// already running loses, an end from a stale copy loses its fence and is
// computed from the row instead, and every row holds its own values —
// its worker, its status, its lane, its result, its error.
func TestMergedTransitionsKeepTheirOwnAnswers(t *testing.T) {
	s, db := openStore(t)
	mysql.NeverSlow(s)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	create := func() persistence.Job {
		j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
		require.NoError(t, err)
		return j
	}

	// Four running jobs to end (ids are in creation order: their ends sort
	// before the claims), the held job, four queued jobs to claim and one
	// already running.
	running := make([]persistence.Job, 4)
	for i := range running {
		j := create()
		_, err := s.Claim(ctx, j.ID, "w"+string(rune('a'+i)), time.Now())
		require.NoError(t, err)
		require.NoError(t, s.SetLane(ctx, j.ID, 1, string(rune('0'+i))))
		running[i], err = s.Get(ctx, j.ID)
		require.NoError(t, err)
	}
	held := create()
	queued := []persistence.Job{create(), create(), create(), create()}
	taken := create()
	_, err := s.Claim(ctx, taken.ID, "w-first", time.Now())
	require.NoError(t, err)

	// The held job's claim leads a trip that waits on its row's lock.
	lock, err := db.admin.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback() }()
	_, err = lock.ExecContext(ctx, "SELECT id FROM jobs WHERE id = ? FOR UPDATE", held.ID)
	require.NoError(t, err)
	heldDone := make(chan error, 1)
	go func() {
		_, err := s.Claim(ctx, held.ID, "w-held", time.Now())
		heldDone <- err
	}()
	require.Eventually(t, func() bool { return mysql.TxsInFlight(s) == 1 && mysql.PendingTxs(s) == 0 },
		10*time.Second, time.Millisecond)

	var wg sync.WaitGroup
	claimed := make([]persistence.Job, len(queued))
	for i, j := range queued {
		wg.Go(func() {
			var err error
			claimed[i], err = s.Claim(ctx, j.ID, "q"+string(rune('a'+i)), time.Now())
			require.NoError(t, err)
		})
	}
	wg.Go(func() {
		_, err := s.Claim(ctx, taken.ID, "w-second", time.Now())
		require.ErrorIs(t, err, persistence.ErrConflict, "a claim of a running job loses in a merged statement")
	})
	ends := []persistence.Finish{
		{Status: persistence.StatusSucceeded, Result: []byte(`{"n":0}`)},
		{Status: persistence.StatusSucceeded, Result: []byte(`{"n":1}`)},
		{Status: persistence.StatusFailed, Reason: "crashed", Error: "boom"},
		{Status: persistence.StatusSucceeded, Result: []byte(`{"n":3}`)},
	}
	ended := make([]persistence.Job, len(running))
	for i := range running {
		from := running[i]
		if i == 3 {
			from.Lane = "stale" // the row's lane is "3": the fence does not match
		}
		f := ends[i]
		f.Lane, f.From = running[i].Lane, &from
		wg.Go(func() {
			var err error
			ended[i], err = s.Finish(ctx, running[i].ID, 1, f)
			require.NoError(t, err)
		})
	}
	require.Eventually(t, func() bool { return mysql.PendingTxs(s) == len(queued)+1+len(running) },
		10*time.Second, time.Millisecond)
	txs, _, _ := mysql.Trips(s)
	merged := mysql.MergedRows(s)

	require.NoError(t, lock.Rollback())
	require.NoError(t, <-heldDone)
	wg.Wait()
	after, _, _ := mysql.Trips(s)
	// The held trip's end, the waiting calls' one trip, and the stale end
	// computed from its row.
	require.Equal(t, int64(2), after-txs, "the waiting calls went in one trip, then the stale end")
	require.Equal(t, int64(len(queued)+1+len(running)), mysql.MergedRows(s)-merged, "claims and ends each in one statement")

	for i, j := range claimed {
		require.Equal(t, persistence.StatusRunning, j.Status)
		require.Equal(t, "q"+string(rune('a'+i)), j.WorkerID)
		require.Equal(t, 1, j.Attempts)
		got, err := s.Get(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, j.WorkerID, got.WorkerID)
		require.Equal(t, persistence.StatusRunning, got.Status)
	}
	got, err := s.Get(ctx, taken.ID)
	require.NoError(t, err)
	require.Equal(t, "w-first", got.WorkerID, "the lost claim wrote nothing")
	require.Equal(t, 1, got.Attempts)

	for i, j := range ended {
		require.Equal(t, ends[i].Status, j.Status)
		got, err := s.Get(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, ends[i].Status, got.Status)
		require.Equal(t, running[i].Lane, got.Lane)
		require.Equal(t, running[i].WorkerID, got.WorkerID)
		require.Equal(t, ends[i].Reason, got.Reason)
		require.Equal(t, ends[i].Error, got.Error)
		if ends[i].Result != nil {
			require.JSONEq(t, string(ends[i].Result), string(got.Result))
		} else {
			require.Empty(t, got.Result)
		}
		require.Len(t, got.AttemptsLog, 1)
		require.Equal(t, running[i].Lane, got.AttemptsLog[0].Lane)
	}

	// A second end of an ended job is refused, merged or not.
	var refused sync.WaitGroup
	for i := range running {
		from := running[i]
		refused.Go(func() {
			_, err := s.Finish(ctx, from.ID, 1, persistence.Finish{Status: persistence.StatusSucceeded, Lane: from.Lane, From: &from})
			require.Error(t, err)
			require.False(t, errors.Is(err, persistence.ErrNotFound))
		})
	}
	refused.Wait()
	for i := range running {
		got, err := s.Get(ctx, running[i].ID)
		require.NoError(t, err)
		require.Equal(t, ends[i].Status, got.Status, "the refused end wrote nothing")
	}
}

// TestMergedUpdateFindsRowsByPrimaryKey: a merged end of more jobs than
// are running is still planned as lookups by id. Left to itself the
// server scans (and locks) the running range of jobs_status_created
// instead, which a small fleet's long batch of ends makes the cheaper
// plan on paper.
func TestMergedUpdateFindsRowsByPrimaryKey(t *testing.T) {
	s, db := openStore(t)
	ctx := t.Context()
	var running []persistence.Job
	for i := range 40 {
		j, _, err := s.Create(ctx, persistence.Job{Mode: "noop", MaxAttempts: 1, TimeoutS: 60})
		require.NoError(t, err)
		if i < 4 {
			j, err = s.Claim(ctx, j.ID, "w1", time.Now())
			require.NoError(t, err)
			running = append(running, j)
		}
	}
	// The batch names the four running jobs and 60 others.
	ids := make([]string, 0, 64)
	args := make([][]any, 0, 64)
	at := time.Now().UTC()
	for i := range 64 {
		from := persistence.Job{ID: "gone-" + string(rune('A'+i)), WorkerID: "w1", StartedAt: at}
		if i < len(running) {
			from = running[i]
		}
		ids = append(ids, from.ID)
		args = append(args, mysql.FinishFromArgs(&from, at))
	}
	_, err := db.admin.ExecContext(ctx, "ANALYZE TABLE jobs")
	require.NoError(t, err)
	query, qargs := mysql.MergedUpdate(mysql.FinishFromSQL, ids, args)
	rows, err := db.admin.QueryContext(ctx, "EXPLAIN "+query, qargs...)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var keys []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		for i, c := range cols {
			if c == "key" {
				k, _ := vals[i].([]byte)
				keys = append(keys, string(k))
			}
		}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"PRIMARY"}, keys, "%s", query)
}
