// Package chromium is the "chromium" driver of the worker agent: it runs the
// job modes fetch and macro (and noop, as the simulated driver does, so any
// job runs on any lane) and interactive sessions on lanes of headless
// Chromium, driven over the DevTools protocol with chromedp.
//
// What it owns: the lanes' browser processes and their profile directories
// (<WorkDir>/lane-<n>), the pages jobs and sessions run in, and the clean
// state between them. The agent owns which lane a job or session gets; the
// hub owns the asset store, which the driver reaches through Config.Upload.
//
// # One Chromium process per lane
//
// A lane is one Chromium process with its own profile directory, started
// on first use, reused by every job, and restarted when unhealthy. The
// alternative — one Chromium for all lanes, a BrowserContext per lane — was
// measured (BenchmarkLaneModel: every lane with a loaded local page; PSS
// divides shared pages among the processes using them, so it sums
// honestly; RSS summed over processes counts the shared Chromium binary
// once per process):
//
//	lanes  process per lane        BrowserContext per lane
//	       PSS total  RSS sum      PSS total  RSS sum
//	1        384 MB    892 MB        382 MB    892 MB
//	2        545 MB   1772 MB        449 MB   1204 MB
//	4        831 MB   3517 MB        538 MB   1740 MB
//
// So a lane costs about 150 MB (PSS) as a process and about 50 MB as a
// BrowserContext: a process per lane costs ~100 MB more per lane (~1 GB
// for 10 lanes). We pay it because:
//
//   - A crash or a hang stays in its lane. A killed or hung browser (tests:
//     SIGKILL, SIGSTOP) costs one lane a restart (~0.7 s) and one job; with
//     one browser it would fail every running job and session at once.
//   - A lane's DevTools URL (DevToolsURL, which a CDP tunnel to a
//     session's lane uses) gives access to that lane only. A shared
//     browser's endpoint would expose every lane's pages and cookies to a
//     client given one lane.
//   - A restart is per lane: the others keep running; the health check
//     looks at one process; RSS per lane is measurable.
//   - The CPU cost is the same either way: it is dominated by creating a
//     page (below), which both models do per job.
//
// Memory of a running lane (BenchmarkFetch, 2 lanes, per lane): idle
// (started, no page) PSS 185 MB / RSS sum 574 MB; with a loaded page
// 264 / 878 MB; after 100 fetch jobs (pages closed) 193 / 593 MB.
//
// # Clean state between jobs
//
// Each job (and each session) gets a new page in a new BrowserContext, an
// incognito-like profile: cookies, localStorage, IndexedDB, service
// workers, the HTTP cache, permissions and history start empty. When the
// job ends its page is closed and its BrowserContext disposed of, which
// throws all of that away and closes any tab the job opened, so a cookie
// set in one job is never visible to the next (tested). Reusing one page
// across jobs would cost ~0.1 CPU-s per job instead of ~0.5, but would
// carry history (history.back() to the previous job's page, even from the
// back/forward cache), sessionStorage and window state from job to job;
// it is not done.
//
// What a raw CDP client may leave beyond its own page — tabs and windows
// in the default BrowserContext, contexts of its own, the default
// context's cookies, storage and cache, permissions, a download behaviour
// — is taken away when the session releases the lane, without a restart
// where that suffices (hygiene.go says what, and when the lane restarts
// instead; tested with a chromedp client in the default context).
//
// A lane never shows more than one page: popups (window.open, target=_blank)
// are closed as soon as the browser reports them, so there are never more
// than M pages at once, plus a popup for the few milliseconds before it is
// closed (tested with a sampler).
//
// # Egress policy
//
// A job's URLs are whoever submitted it, and the browser runs inside the
// worker's network, so every request of a job's page (its URL, each
// navigation and redirect, every subresource and script fetch) is paused
// with CDP Fetch.enable and let go only when none of the addresses its
// host resolves to is denied (egress.go); else it fails with
// BlockedByClient. Denied by default: link-local and the cloud metadata
// addresses; Config.EgressDeny/EgressAllow and $PAPRIKA_BROWSER_EGRESS_DENY
// /$PAPRIKA_BROWSER_EGRESS_ALLOW add rules. A denied top-level URL fails the
// job at once with job_error "egress policy denies …". A session's lane is
// guarded as a whole, the pages raw CDP clients open included ("A
// session's guard", below). Residual risks: DNS rebinding between the
// check and Chromium's own lookup, and requests the Fetch domain does not
// pause (a job page's service and shared workers; WebSocket and WebRTC
// connections everywhere); a firewall on the worker covers them.
//
// # Health and restarts
//
// Before each job or session the lane is checked: the browser process must
// still be connected and answer Target.getTargets within HealthTimeout
// (2.5 s), with no page left over. A failed check, a renderer that crashed
// in the previous job (Inspector.targetCrashed) or a page that could not be
// closed restarts the browser: the process group is killed (SIGKILL), every
// process still naming the profile directory too, the profile is wiped and
// a new browser started. What the previous user marked (a crashed renderer,
// a cleanup that failed) restarts the lane as soon as that user releases
// it, in the background (the lane's state is restarting meanwhile, and the
// next user waits for it); what the check finds restarts it before the
// next job, whose log says so ("lane 0: restarting chromium: ..."). Close
// kills every lane the same way (tested: no process left).
//
// A lane's name (LaneURL, what the hub is told) is always
// chromium://<worker id>/lane/<n>: no DevTools address leaves the worker.
// DevToolsURL is the running browser's address, for the worker's own use;
// a watcher per browser drops it the moment the browser exits on its own.
// LaneChanges signals each start, exit and restart; the agent reports the
// lanes' states (LaneState: restarting) to the hub in a heartbeat's
// lane_states.
//
// A job's context reaches the browser: when it ends (deadline, cancel_job,
// agent stopping) the call in progress returns at once and the page is
// closed, which aborts its navigation; the lane is clean for the next job,
// not restarted. A page that never finishes loading therefore costs its
// job's deadline and nothing more.
//
// Failures: bad params, navigation errors, non-2xx pages and a step that
// runs out of time are job_error; a browser that cannot start, a crashed
// renderer or browser and an asset that cannot be stored are lane_error; a
// job stopped by its context is reported by the agent as deadline_exceeded,
// canceled or worker_lost.
//
// # fetch
//
// Params: url (http, https, data or about:blank; required), wait_for (a CSS
// selector to wait for after the load, optional), screenshot (bool, default
// true). The page is loaded; its main document's status is checked (2xx, or
// job_error "http status 404 (...)"); the job waits for wait_for; then it
// stores page.html (the DOM serialized after scripts ran, text/html) and
// screenshot.png (the viewport, Config.WindowWidth×WindowHeight, image/png)
// through Config.Upload. Result: {"status", "final_url", "title"}, assets
// page.html and screenshot.png. Log lines: "navigate <url>", "status 200",
// "wait_for <sel>", "page.html <n> bytes", "screenshot <n> bytes".
// full_page (bool) makes screenshot.png the whole document (its layout
// size, each side capped at 16384 px); pdf (bool) also stores page.pdf
// (Page.printToPDF with backgrounds, streamed to a file, at most 256 MiB).
//
// # downloads
//
// A file the page of a fetch or macro job downloads is stored as the
// asset downloads/<name> (downloads.go): the browser saves it into a
// directory of the job's under the lane's profile, the driver waits after
// the page work for the downloads in progress (at most 15 s, within the
// deadline; after a macro whose last step is a click or type at least
// 500 ms, for one to begin), uploads each from its file and removes
// it. The name is the page's suggested one, sanitized (no separators,
// control or bidi characters, no leading dot, at most 120 bytes) and
// deduplicated ("a (2).bin"); at most 32 files of 512 MiB each. A session
// uploads each download as it completes through Config.SessionUpload.
//
// # macro
//
// Params: steps, a list of at most 1000 objects {"op": ..., ...}. Every step
// is checked before the first runs; unknown fields are refused. The steps
// run in order on one page; each is logged as it starts ("step 3/7 click
// #submit") and as it ends. The first failing step fails the job with
// job_error "step 3 (click #missing): <cause>". Result: {"steps": [each
// step's result]} (at most 900 KiB). A step may set timeout_ms (default
// Config.StepTimeout, 30 s; at most 10 min); the job's deadline applies too.
// Selectors are CSS selectors (document.querySelector), and a step waits for
// its element to appear.
//
//	op          fields                                result
//	navigate    url; any_status (bool): accept a      {"status", "url", "title"}
//	            non-2xx answer
//	click       selector (waits until visible)        {}
//	type        selector, text; clear (bool): empty   {}
//	            the field first
//	wait        selector, and visible (bool) or gone  {}
//	            (bool); or ms (sleep, ≤ 600000)
//	screenshot  name (asset name, default             {"bytes", "asset"}
//	            step-<i>.png, i from 1); selector
//	            (optional: that element only)
//	text        selector                              {"text"} (innerText, cut at
//	                                                  256 KiB: "truncated": true)
//	eval        expression (promises are awaited)     {"value"} (its JSON, ≤ 256 KiB)
//
// # Sessions
//
// Driver implements agent.SessionDriver: a session gets a lane's fresh
// page like a job and keeps it until closed; its commands are macro steps
// with the same ops and fields, their results the step's result. Since a
// session has no job to attach assets to, a screenshot comes back inline:
// {"bytes", "png_base64"} (at most 640 KiB of PNG; screenshot an element
// for less).
//
// # Browser options
//
// fetch and macro params, and a session's open command, may carry the
// browser options of messages.BrowserOptions (checked there, once for hub
// and worker): proxy, user_agent, viewport, locale, timezone, cookies,
// block (options.go). A job's or session's own page gets them before its
// first navigation: the proxy as its BrowserContext's proxyServer (bypass
// list "<-loopback>": all of the page's traffic goes through it; the
// proxy's own address must pass the egress policy), its 407 challenges
// answered through Fetch.authRequired with the credentials (once per
// request, and never a website's own 401), Emulation.setUserAgentOverride
// (with Accept-Language = locale), setDeviceMetricsOverride,
// setLocaleOverride, setTimezoneOverride, Network.setCookies; blocked
// requests fail with BlockedByClient in the same Fetch pause as the
// egress check. The password is never logged: the job log says "proxy
// <server> (with credentials)".
//
// A session with options also gets a browser of its own, started with
// them on its command line (--proxy-server, --proxy-bypass-list,
// --user-agent, --lang and --accept-lang, TZ, --window-size) and its
// cookies in the default context, so that pages a raw CDP client opens
// through the gateway see them too; the lane's next user gets a fresh
// default browser (the browser's launch key names the session).
//
// # A session's guard
//
// Every session, with options or without, has a guard (guard.go): a
// DevTools connection of the driver's own to the lane's browser, opened
// before the session is handed out, with Fetch enabled on the browser
// target, so that every request of the browser — the pages, iframes and
// workers a raw CDP client opens, in any BrowserContext — pauses until
// the guard judged it as a tab judges its own: the block option, then the
// egress policy on the resolved addresses; and the session's proxy's 407
// challenges are answered with its credentials (only that proxy's: a
// context a client gives a proxy of its own gets none; never a website's
// 401; once per request). A client's own Fetch interception keeps
// working: Chromium hands each request to the client's first and the
// guard's last, so the guard judges what the client let go, rewrites
// included. The guard costs each request one more DevTools round trip,
// 0.6 to 1 ms on loopback (BenchmarkGuard: a page of 41 local requests
// loads in 1.25-1.27x the time it takes without a guard); it is not skipped
// for a session without options, since the egress policy applies to
// every session. When the session closes, its guard first fails every
// request (nothing a client left running goes out unjudged), the lane is
// cleaned, and only then the guard disconnects, before the next user gets
// the lane. A guard that loses its connection while its session is open
// stops the lane's browser. What a client still controls: its own
// Emulation and Network overrides, clearing cookies, answers it makes up
// itself with Fetch.fulfillRequest (they never reach the network), and
// connections the Fetch domain does not pause (WebSocket, WebRTC).
//
// # Wiring
//
// The driver is built before the agent but uploads through it:
//
//	var a *agent.Agent
//	drv, err := chromium.New(chromium.Config{Lanes: lanes, Path: path,
//		Upload: func(ctx context.Context, jobID, name, ct string, r io.Reader, size int64) error {
//			return a.UploadAsset(ctx, jobID, name, ct, r, size)
//		}})
//	a, err = agent.New(agent.Config{Lanes: lanes, DriverImpl: drv, ...})
//	err = a.Run(ctx)
//	drv.Close() // after Run returned: kills every browser
//
// # Throughput
//
// A fetch of a small local page with its two assets takes ~0.7 CPU-s
// (Chromium's processes and this one), of which ~0.4 s is creating the page
// (a renderer process and the DevTools attach); the rest is the load, the
// screenshot and the HTML. On 2 cores that gives 2–3 fetch jobs/s whatever
// the number of lanes (BenchmarkFetch); lanes buy concurrency for slow pages,
// not CPU.
//
// Chromium runs with the flags this machine needs (--headless --no-sandbox
// as root --disable-gpu --disable-quic --no-first-run
// --disable-background-networking --disable-component-update --disable-sync,
// a fresh --user-data-dir) plus those that keep background windows at full
// speed; its DevTools port listens on 127.0.0.1 only.
package chromium
