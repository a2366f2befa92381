package persistence

import (
	"context"
	"iter"
	"time"
)

// JobLister is the part of JobStore that AllJobs reads, so that callers
// (and their tests) need no whole store.
type JobLister interface {
	List(ctx context.Context, q ListQuery) (jobs []Job, next string, err error)
}

// PageOption bounds a walk of AllJobs.
type PageOption func(*pageBounds)

type pageBounds struct {
	timeout  time.Duration // per List call; 0: ctx alone
	maxPages int           // 0: no bound
}

// PageTimeout gives every List call its own deadline d within ctx, so one
// slow page fails alone instead of a walk being bounded as a whole (the
// sweeps that run from context.Background()). d <= 0 means ctx alone.
func PageTimeout(d time.Duration) PageOption {
	return func(b *pageBounds) { b.timeout = d }
}

// MaxPages ends the walk quietly after n pages, a bound on how much of a
// huge table one pass reads. n <= 0 means no bound.
func MaxPages(n int) PageOption {
	return func(b *pageBounds) { b.maxPages = n }
}

// AllJobs yields every job q selects, page after page by cursor from
// q.Cursor on, until the last page, the caller's break, or an error, which
// is yielded once (with a zero Job) and ends the walk. ctx bounds the whole
// walk; the options bound each page and the number of pages. Pages are read
// lazily, one List call when the previous page is used up, so a consumer
// that stops early reads no further.
func AllJobs(ctx context.Context, s JobLister, q ListQuery, opts ...PageOption) iter.Seq2[Job, error] {
	var b pageBounds
	for _, o := range opts {
		o(&b)
	}
	return func(yield func(Job, error) bool) {
		for page := 0; b.maxPages <= 0 || page < b.maxPages; page++ {
			jobs, next, err := listPage(ctx, s, q, b.timeout)
			if err != nil {
				yield(Job{}, err)
				return
			}
			for _, j := range jobs {
				if !yield(j, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			q.Cursor = next
		}
	}
}

// listPage is one List call, within its own timeout when there is one. The
// page's context ends before its jobs are yielded: the consumer's work on
// them is not the store's.
func listPage(ctx context.Context, s JobLister, q ListQuery, timeout time.Duration) ([]Job, string, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return s.List(ctx, q)
}
