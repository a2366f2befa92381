package chromium

import (
	"context"
	"fmt"

	"github.com/paprika-hub/paprika/agent"
)

// UseLane hands lane idx to code of its own (a custom mode's handler in
// package worker, which drives it over CDP, e.g. with chromedp's remote
// allocator): it waits for the lane, makes sure its browser runs (starting
// or restarting it) and returns the browser-level DevTools WebSocket URL.
// release cleans the lane for the next user as after any job — every page
// and BrowserContext the code opened is closed, the default context's data
// cleared, the browser restarted when that is not enough (hygiene.go) —
// and frees it; call it once the code is done with the browser (it is safe
// to call twice). note receives lines for the job's log.
//
// The browser is the caller's to drive: the egress and popup guards that
// fetch and macro pages get (a BrowserContext per job, request
// interception) are not applied, as for a CDP tunnel. A browser that
// cannot start fails with reason lane_error.
func (d *Driver) UseLane(ctx context.Context, idx int, note func(string)) (devtoolsURL string, release func(), err error) {
	if idx < 0 || idx >= len(d.lanes) {
		return "", nil, agent.Fail(agent.ReasonLaneError, "lane %d: the chromium driver has lanes 0..%d", idx, len(d.lanes)-1)
	}
	l := d.lanes[idx]
	release, err = l.acquire(ctx)
	if err != nil {
		return "", nil, err
	}
	b, err := l.ensure(ctx, note)
	if err != nil {
		release()
		if ctx.Err() != nil {
			return "", nil, fmt.Errorf("start lane %d: %w", idx, ctx.Err())
		}
		return "", nil, agent.Fail(agent.ReasonLaneError, "%v", err)
	}
	return b.wsURL, release, nil
}
