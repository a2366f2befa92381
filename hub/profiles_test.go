package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/credential"
	"github.com/paprika-hub/paprika/persistence"
)

// profileSite is a local site: /login sets a cookie (by header), a
// localStorage item and an IndexedDB record (by script); /check shows all
// three in its title and
// records the cookie its request carried; /slow answers after a pause.
func profileSite(t *testing.T, sawCookie *atomic.Value) *httptest.Server {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/login":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cret", Path: "/", MaxAge: 3600})
			// The job waits for #done: the IndexedDB write has committed.
			fmt.Fprint(w, `<!doctype html><title>login</title><script>localStorage.setItem("token","t-123");
const o = indexedDB.open("auth", 1);
o.onupgradeneeded = () => o.result.createObjectStore("kv");
o.onsuccess = () => { const tx = o.result.transaction("kv", "readwrite");
	tx.objectStore("kv").put({user: "alice", since: new Date(0)}, "me");
	tx.oncomplete = () => { const p = document.createElement("p"); p.id = "done"; document.body.appendChild(p); }; };
</script>`)
		case "/check":
			if c, err := r.Cookie("sid"); err == nil {
				sawCookie.Store(c.Value)
			}
			// The IndexedDB record is read while the page parses: the
			// restore put it in place before the page's scripts ran.
			fmt.Fprint(w, `<!doctype html><title>-</title><script>
const base = "cookie=" + document.cookie + " ls=" + localStorage.getItem("token");
const o = indexedDB.open("auth");
o.onupgradeneeded = () => { document.title = base + " idb=missing"; };
o.onsuccess = () => { if (!o.result.objectStoreNames.contains("kv")) return;
	const g = o.result.transaction("kv").objectStore("kv").get("me");
	g.onsuccess = () => { const v = g.result;
		document.title = base + " idb=" + (v ? v.user + "@" + (v.since instanceof Date ? v.since.getTime() : "?") : "none");
		const p = document.createElement("p"); p.id = "done"; document.body.appendChild(p); }; };
</script>`)
		case "/slow":
			time.Sleep(600 * time.Millisecond)
			fmt.Fprint(w, `<!doctype html><title>slow</title>`)
		case "/slower":
			time.Sleep(5 * time.Second)
			fmt.Fprint(w, `<!doctype html><title>slower</title>`)
		}
	}))
	t.Cleanup(site.Close)
	return site
}

func waitWorkers(t *testing.T, url string, n int) {
	require.Eventually(t, func() bool {
		st, b := do(t, "GET", url+"/workers", "")
		if st != http.StatusOK {
			return false
		}
		var ws struct {
			Workers []persistence.WorkerInfo `json:"workers"`
		}
		if json.Unmarshal(b, &ws) != nil {
			return false
		}
		alive := 0
		for _, w := range ws.Workers {
			if w.Alive && w.Status == "active" && w.InFlight == 0 {
				alive++
			}
		}
		return alive == n
	}, 30*time.Second, 50*time.Millisecond)
}

// profileSecret is the worker secret of the profile tests' hubs.
const profileSecret = "test-worker-secret-0123456789"

// profileFleet starts a hub with profileSecret and the settings (key,
// value pairs), and two Chromium workers w1 and w2 of lanes lanes each
// holding their credentials; it returns once both are alive and idle.
func profileFleet(t *testing.T, lanes int, w1, w2 string, settings ...string) *Hub {
	cfg := testConfig(t)
	require.NoError(t, cfg.Set("auth.worker_secret", profileSecret))
	for i := 0; i+1 < len(settings); i += 2 {
		require.NoError(t, cfg.Set(settings[i], settings[i+1]))
	}
	h := startTestHub(t, cfg)
	for _, id := range []string{w1, w2} {
		startChromiumAgentLanes(t, h.URL(), id, credential.Worker(profileSecret, id), lanes)
	}
	waitWorkers(t, h.URL(), 2)
	return h
}

// profileFetch makes the body of a fetch job of path on site under
// profile ("" = none), waiting for #done on the pages that set it.
func profileFetch(site string) func(path, profile string) string {
	return func(path, profile string) string {
		wait, prof := "", ""
		if path == "/login" || path == "/check" {
			wait = `,"wait_for":"#done"`
		}
		if profile != "" {
			prof = `,"profile":"` + profile + `"`
		}
		return `{"mode":"fetch","params":{"url":"` + site + path + `"` + wait + `,"screenshot":false` + prof + `}}`
	}
}

type profileList struct {
	Profiles []struct {
		Name       string    `json:"name"`
		Bytes      int64     `json:"bytes"`
		UpdatedAt  time.Time `json:"updated_at"`
		LastWorker string    `json:"last_worker"`
		InUseBy    string    `json:"in_use_by"`
	} `json:"profiles"`
}

// TestProfilesAcrossWorkers: a job logs in under profile alice on one
// worker; the next job with alice runs on the other worker and finds the
// cookie (sent with its first request), the localStorage item and the
// IndexedDB record (there before the page's scripts ran); with
// both workers free, alice's jobs land on the worker that ran it last;
// jobs of one profile never overlap, the waiting one shows why; a
// profile in use cannot be deleted; a stale attempt's save is refused.
func TestProfilesAcrossWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	const secret = profileSecret
	var sawCookie atomic.Value
	site := profileSite(t, &sawCookie)
	// Two lanes each: affinity goes down to the lane, and the worker's
	// lane free the longest (what an unhinted job takes) is not always it.
	url := profileFleet(t, 2, "wp1", "wp2", "scheduler.affinity_wait", "2s").URL()

	fetch := profileFetch(site.URL)
	login := waitFinal(t, url, submit(t, url, fetch("/login", "alice")).ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, login.Status, "%s %s", login.Reason, login.Error)
	first := login.WorkerID

	// The worker that logged in is drained: the next job runs on the other.
	other := map[string]string{"wp1": "wp2", "wp2": "wp1"}[first]
	st, b := do(t, "PATCH", url+"/workers/"+first, `{"status":"drain"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	check := waitFinal(t, url, submit(t, url, fetch("/check", "alice")).ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, check.Status, "%s %s", check.Reason, check.Error)
	require.Equal(t, other, check.WorkerID)
	var res struct {
		Title string `json:"title"`
	}
	require.NoError(t, json.Unmarshal(check.Result, &res))
	require.Equal(t, "cookie=sid=s3cret ls=t-123 idb=alice@0", res.Title)
	require.Equal(t, "s3cret", sawCookie.Load(), "the cookie went with the page's first request")

	// An unhinted job on the other lane, so that check's lane is the one
	// free the longest (the next unhinted job's) and the other was used.
	spacer := waitFinal(t, url, submit(t, url, `{"mode":"noop","params":{"lines":1}}`).ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, spacer.Status, "%s %s", spacer.Reason, spacer.Error)
	require.Equal(t, other, spacer.WorkerID)
	require.NotEqual(t, check.Lane, spacer.Lane, "a lane never used is free longer than check's")

	// The warm lane busy: alice's job is hinted to it, and takes the warm
	// worker's other lane at once (the lane is a preference, not a wait).
	busy := submit(t, url, `{"mode":"fetch","params":{"url":"`+site.URL+`/slower","screenshot":false}}`)
	require.Eventually(t, func() bool {
		j := getJob(t, url, busy.ID)
		return j.Status == persistence.StatusRunning && j.Lane != ""
	}, 30*time.Second, 10*time.Millisecond)
	busy = getJob(t, url, busy.ID)
	require.Equal(t, other, busy.WorkerID)
	require.Equal(t, check.Lane, busy.Lane, "the lane free the longest, check's")
	moved := waitFinal(t, url, submit(t, url, fetch("/check", "alice")).ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, moved.Status, "%s %s", moved.Reason, moved.Error)
	require.Equal(t, other, moved.WorkerID)
	// Had it waited for the warm lane, it would have had it (free then).
	require.NotEqual(t, busy.Lane, moved.Lane, "the warm lane was busy: it took the other, without waiting")
	require.NotEmpty(t, moved.Lane)
	waitFinal(t, url, busy.ID, 60*time.Second)

	// Affinity: both free, alice's jobs go to the worker that ran it last,
	// and on it to the lane (browser process) that ran it last — not the
	// lane free the longest, busy's, which an unhinted job would take.
	st, b = do(t, "PATCH", url+"/workers/"+first, `{"status":"active"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	waitWorkers(t, url, 2)
	prev := moved
	for range 4 {
		j := waitFinal(t, url, submit(t, url, fetch("/check", "alice")).ID, 60*time.Second)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "%s %s", j.Reason, j.Error)
		require.Equal(t, other, j.WorkerID, "placed on the warm worker")
		require.Equal(t, prev.Lane, j.Lane, "on the lane of the profile's previous job")
		prev = j
		waitWorkers(t, url, 2)
	}

	// The warm worker busy (both its lanes) past affinity_wait: alice's
	// job takes the other worker rather than wait for the busy one's lane.
	st, b = do(t, "PATCH", url+"/workers/"+first, `{"status":"drain"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	busies := []persistence.Job{
		submit(t, url, `{"mode":"fetch","params":{"url":"`+site.URL+`/slower","screenshot":false}}`),
		submit(t, url, `{"mode":"fetch","params":{"url":"`+site.URL+`/slower","screenshot":false}}`),
	}
	require.Eventually(t, func() bool {
		return getJob(t, url, busies[0].ID).Status == persistence.StatusRunning && getJob(t, url, busies[1].ID).Status == persistence.StatusRunning
	}, 30*time.Second, 10*time.Millisecond)
	st, b = do(t, "PATCH", url+"/workers/"+first, `{"status":"active"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	waitWorkers(t, url, 1) // the reactivated one (the other is busy)
	cold := waitFinal(t, url, submit(t, url, fetch("/check", "alice")).ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, cold.Status, "%s %s", cold.Reason, cold.Error)
	require.Equal(t, first, cold.WorkerID, "after affinity_wait any worker takes it")
	require.NoError(t, json.Unmarshal(cold.Result, &res))
	require.Equal(t, "cookie=sid=s3cret ls=t-123 idb=alice@0", res.Title)
	for _, busy := range busies {
		slower := waitFinal(t, url, busy.ID, 60*time.Second)
		require.Equal(t, persistence.StatusSucceeded, slower.Status, "%s %s", slower.Reason, slower.Error)
		require.Equal(t, other, slower.WorkerID)
		// Its start, not its end: the page load after it is the machine's
		// speed, not the placement's choice.
		require.True(t, cold.StartedAt.Before(slower.FinishedAt), "it did not wait for the warm worker's lanes")
	}
	other = first // alice's warm worker now
	waitWorkers(t, url, 2)

	// One at a time: three slow jobs of bob, with two free workers.
	var ids []string
	for range 3 {
		ids = append(ids, submit(t, url, fetch("/slow", "bob")).ID)
	}
	sawWait, sawConflict := false, false
	require.Eventually(t, func() bool {
		running, done := "", 0
		for _, id := range ids {
			j := getJob(t, url, id)
			switch {
			case j.Status == persistence.StatusRunning:
				running = id
			case j.Status == persistence.StatusQueued && j.WaitingFor == "profile bob in use":
				sawWait = true
			case j.Status.Final():
				done++
			}
		}
		if running != "" && !sawConflict {
			st, b := do(t, "DELETE", url+"/profiles/bob", "")
			if st == http.StatusConflict {
				require.Contains(t, string(b), "profile_in_use")
				sawConflict = true
				// The holder's worker may not save under another attempt;
				// another worker may not save at all.
				j := getJob(t, url, running)
				if j.Status == persistence.StatusRunning {
					tok := "Bearer " + credential.Worker(secret, j.WorkerID)
					st, b := do(t, "PUT", url+"/profiles/bob/state?job="+running+"&attempt=2", `{"cookies":[],"local_storage":{}}`, "Authorization", tok)
					require.Contains(t, []int{http.StatusConflict, http.StatusForbidden}, st, string(b))
					st, b = do(t, "PUT", url+"/profiles/bob/state?job="+running+"&attempt=1", `{"cookies":[],"local_storage":{}}`,
						"Authorization", "Bearer "+credential.Worker(secret, other+"x"))
					require.Equal(t, http.StatusForbidden, st, string(b))
				}
			}
		}
		return done == len(ids)
	}, 60*time.Second, 10*time.Millisecond)
	require.True(t, sawWait, "a waiting job said it waits for the profile")
	require.True(t, sawConflict, "DELETE of a profile in use answered 409")
	var spans []persistence.Job
	for _, id := range ids {
		j := getJob(t, url, id)
		require.Equal(t, persistence.StatusSucceeded, j.Status, "%s %s", j.Reason, j.Error)
		spans = append(spans, j)
	}
	for i := range spans {
		for k := range spans {
			if i != k {
				a, b := spans[i], spans[k]
				require.False(t, a.StartedAt.Before(b.FinishedAt) && b.StartedAt.Before(a.FinishedAt),
					"jobs %s [%s, %s] and %s [%s, %s] of one profile overlapped", a.ID, a.StartedAt, a.FinishedAt, b.ID, b.StartedAt, b.FinishedAt)
			}
		}
	}

	// A finished job's attempt saves nothing.
	st, b = do(t, "PUT", url+"/profiles/alice/state?job="+check.ID+"&attempt=1", `{"cookies":[],"local_storage":{}}`,
		"Authorization", "Bearer "+credential.Worker(secret, check.WorkerID))
	require.Equal(t, http.StatusForbidden, st, string(b))

	// GET /profiles, then DELETE once free.
	st, b = do(t, "GET", url+"/profiles", "")
	require.Equal(t, http.StatusOK, st, string(b))
	var l profileList
	require.NoError(t, json.Unmarshal(b, &l))
	require.Len(t, l.Profiles, 2, string(b))
	require.Equal(t, "alice", l.Profiles[0].Name)
	require.Equal(t, other, l.Profiles[0].LastWorker)
	require.Positive(t, l.Profiles[0].Bytes)
	require.WithinDuration(t, time.Now(), l.Profiles[0].UpdatedAt, time.Minute)
	require.Empty(t, l.Profiles[0].InUseBy)
	st, b = do(t, "DELETE", url+"/profiles/bob", "")
	require.Equal(t, http.StatusNoContent, st, string(b))
	st, _ = do(t, "DELETE", url+"/profiles/bob", "")
	require.Equal(t, http.StatusNotFound, st)
	st, _ = do(t, "DELETE", url+"/profiles/Not.A.Name", "")
	require.Equal(t, http.StatusBadRequest, st)
	st, b = do(t, "GET", url+"/profiles", "")
	require.Equal(t, http.StatusOK, st)
	require.NoError(t, json.Unmarshal(b, &l))
	require.Len(t, l.Profiles, 1, string(b))

	// noop jobs refuse a profile (their params are strict); a bad name is
	// refused everywhere.
	st, b = do(t, "POST", url+"/sessions", `{"profile":"Not.A.Name"}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	st, b = do(t, "POST", url+"/jobs", `{"mode":"noop","params":{"profile":"alice"}}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	st, b = do(t, "POST", url+"/jobs", `{"mode":"fetch","params":{"url":"http://x.test/","profile":"../etc"}}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
}

// TestProfileAffinitySurvivesSchedulerRestart: the scheduler's memory of
// where a profile ran last starts, in a fresh activation, from the
// profile's stored metadata. After a restart of the scheduler, alice's
// next job waits for the worker that ran her login while it is busy, and
// runs there once it frees, though the other worker was free throughout
// (with a memory that started empty it would have run there at once).
func TestProfileAffinitySurvivesSchedulerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	var sawCookie atomic.Value
	site := profileSite(t, &sawCookie)
	h := profileFleet(t, 1, "wr1", "wr2", "scheduler.affinity_wait", "20s")
	url := h.URL()
	fetch := profileFetch(site.URL)

	login := waitFinal(t, url, submit(t, url, fetch("/login", "alice")).ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, login.Status, "%s %s", login.Reason, login.Error)
	warm := login.WorkerID
	other := map[string]string{"wr1": "wr2", "wr2": "wr1"}[warm]
	require.NoError(t, h.InjectPanic(t.Context(), "scheduler", ""))

	// The warm worker busy with a slow job (the other drained meanwhile,
	// so the slow job lands on the warm one), then the other active again.
	st, b := do(t, "PATCH", url+"/workers/"+other, `{"status":"drain"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	slow := submit(t, url, fetch("/slower", ""))
	require.Eventually(t, func() bool { return getJob(t, url, slow.ID).Status == persistence.StatusRunning },
		30*time.Second, 10*time.Millisecond)
	st, b = do(t, "PATCH", url+"/workers/"+other, `{"status":"active"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	waitWorkers(t, url, 1) // the other, idle

	check := waitFinal(t, url, submit(t, url, fetch("/check", "alice")).ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, check.Status, "%s %s", check.Reason, check.Error)
	slowDone := waitFinal(t, url, slow.ID, 30*time.Second)
	require.Equal(t, warm, slowDone.WorkerID)
	require.Equal(t, warm, check.WorkerID, "the restarted scheduler knew alice's warm worker from the store")
	require.False(t, check.StartedAt.Before(slowDone.FinishedAt), "it waited for the warm worker's lane")
}
