package hub

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/credential"
	"github.com/paprika-hub/paprika/persistence"
)

// TestSessionProfiles: a session with profile carol logs in on one
// worker and closes (its profile saved at the clean close); while it is
// open a job with carol waits for it and a second session with carol is
// refused 409 after scheduler.session_profile_wait; the job then runs on
// the other worker and finds the session's cookie and localStorage; the
// next session with carol goes to that (warm) worker, finds them in its
// tab before its first command, changes them, and its close saves them;
// a closed session's late write is refused 409 stale.
func TestSessionProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	const secret = profileSecret
	var sawCookie atomic.Value
	site := profileSite(t, &sawCookie)
	url := profileFleet(t, 1, "ws1", "ws2", "scheduler.affinity_wait", "300ms", "scheduler.session_profile_wait", "1500ms").URL()

	type session struct {
		ID       string `json:"id"`
		WorkerID string `json:"worker_id"`
		Status   string `json:"status"`
		Profile  string `json:"profile"`
	}
	open := func(body string) session {
		st, b := do(t, "POST", url+"/sessions", body)
		require.Equal(t, http.StatusCreated, st, string(b))
		var s session
		require.NoError(t, json.Unmarshal(b, &s))
		return s
	}
	command := func(id, cmd string) string {
		st, b := do(t, "POST", url+"/sessions/"+id+"/commands", cmd)
		require.Equal(t, http.StatusOK, st, string(b))
		var out struct {
			Result struct{ Value string }
		}
		require.NoError(t, json.Unmarshal(b, &out))
		return out.Result.Value
	}
	state := `{"cookies":[],"local_storage":{}}`
	workerTok := func(w string) string { return "Bearer " + credential.Worker(secret, w) }

	s1 := open(`{"profile":"carol","idle_timeout_s":120}`)
	require.Equal(t, "carol", s1.Profile)
	st, b := do(t, "GET", url+"/sessions/"+s1.ID, "")
	require.Equal(t, http.StatusOK, st, string(b))
	require.Contains(t, string(b), `"profile":"carol"`)
	command(s1.ID, `{"op":"navigate","url":"`+site.URL+`/login"}`)
	command(s1.ID, `{"op":"wait","selector":"#done"}`) // its IndexedDB write committed

	// Held by s1: a job with carol waits, saying why; DELETE is refused;
	// only s1's worker may write carol, under s1.
	job := submit(t, url, `{"mode":"fetch","params":{"url":"`+site.URL+`/check","screenshot":false,"profile":"carol"}}`)
	require.Eventually(t, func() bool { return getJob(t, url, job.ID).WaitingFor == "profile carol in use" }, 10*time.Second, 20*time.Millisecond)
	st, b = do(t, "DELETE", url+"/profiles/carol", "")
	require.Equal(t, http.StatusConflict, st, string(b))
	require.Contains(t, string(b), `"in_use_by":"`+s1.ID+`"`)
	other := map[string]string{"ws1": "ws2", "ws2": "ws1"}[s1.WorkerID]
	st, b = do(t, "PUT", url+"/profiles/carol/state?session="+s1.ID, state, "Authorization", workerTok(other))
	require.Equal(t, http.StatusForbidden, st, string(b))
	st, b = do(t, "PUT", url+"/profiles/other/state?session="+s1.ID, state, "Authorization", workerTok(s1.WorkerID))
	require.Equal(t, http.StatusForbidden, st, string(b), "s1 does not hold profile other")

	// A second session with carol waits for it, then gives up with 409.
	began := time.Now()
	req, err := http.NewRequest("POST", url+"/sessions", strings.NewReader(`{"profile":"carol"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var refused struct {
		Error struct {
			Code    string `json:"code"`
			InUseBy string `json:"in_use_by"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&refused))
	res.Body.Close()
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Equal(t, "profile_in_use", refused.Error.Code, "%+v", refused)
	require.Equal(t, s1.ID, refused.Error.InUseBy)
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	require.GreaterOrEqual(t, time.Since(began), 1500*time.Millisecond, "it waited session_profile_wait")
	require.Equal(t, persistence.StatusQueued, getJob(t, url, job.ID).Status, "the job still waits for s1")

	// s1's worker drained (the session goes on), s1 closed: the job runs
	// on the other worker with what s1 left.
	st, b = do(t, "PATCH", url+"/workers/"+s1.WorkerID, `{"status":"drain"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	closedAt := time.Now()
	st, b = do(t, "DELETE", url+"/sessions/"+s1.ID, "")
	require.Equal(t, http.StatusOK, st, string(b))
	done := waitFinal(t, url, job.ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, done.Status, "%s %s", done.Reason, done.Error)
	require.Equal(t, other, done.WorkerID)
	require.True(t, done.StartedAt.After(closedAt), "the job started after the session closed")
	var res1 struct {
		Title string `json:"title"`
	}
	require.NoError(t, json.Unmarshal(done.Result, &res1))
	require.Equal(t, "cookie=sid=s3cret ls=t-123 idb=alice@0", res1.Title)
	require.Equal(t, "s3cret", sawCookie.Load())

	// s1 is closed: its worker's late write is stale.
	st, b = do(t, "PUT", url+"/profiles/carol/state?session="+s1.ID, state, "Authorization", workerTok(s1.WorkerID))
	require.Equal(t, http.StatusConflict, st, string(b))
	require.Contains(t, string(b), "stale")

	// Both workers free: the next session with carol goes to the worker
	// the job ran on, and its tab has the profile before its first command.
	st, b = do(t, "PATCH", url+"/workers/"+s1.WorkerID, `{"status":"active"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	waitWorkers(t, url, 2)
	s2 := open(`{"profile":"carol"}`)
	require.Equal(t, other, s2.WorkerID, "placed on the warm worker")
	st, b = do(t, "GET", url+"/profiles", "")
	require.Equal(t, http.StatusOK, st, string(b))
	var l profileList
	require.NoError(t, json.Unmarshal(b, &l))
	require.Len(t, l.Profiles, 1, string(b))
	require.Equal(t, s2.ID, l.Profiles[0].InUseBy)
	command(s2.ID, `{"op":"navigate","url":"`+site.URL+`/check"}`)
	// The page sets its title once its IndexedDB read answered ("-" until
	// then: a CI run under load read it first).
	command(s2.ID, `{"op":"wait","selector":"#done"}`)
	require.Equal(t, "cookie=sid=s3cret ls=t-123 idb=alice@0", command(s2.ID, `{"op":"eval","expression":"document.title"}`))
	command(s2.ID, `{"op":"eval","expression":"localStorage.setItem('token','t-456'); 'ok'"}`)
	st, b = do(t, "DELETE", url+"/sessions/"+s2.ID, "")
	require.Equal(t, http.StatusOK, st, string(b))

	// s2's clean close saved its change: the next job sees it.
	j := waitFinal(t, url, submit(t, url, `{"mode":"fetch","params":{"url":"`+site.URL+`/check","screenshot":false,"profile":"carol"}}`).ID, 60*time.Second)
	require.Equal(t, persistence.StatusSucceeded, j.Status, "%s %s", j.Reason, j.Error)
	require.NoError(t, json.Unmarshal(j.Result, &res1))
	require.Equal(t, "cookie=sid=s3cret ls=t-456 idb=alice@0", res1.Title)
	// The job's end frees the lock by a plain send to the scheduler,
	// which may land just after the job reads final.
	require.Eventually(t, func() bool {
		st, b = do(t, "GET", url+"/profiles", "")
		require.Equal(t, http.StatusOK, st, string(b))
		var after profileList // a fresh one: decoding keeps fields the JSON omits
		require.NoError(t, json.Unmarshal(b, &after))
		require.Len(t, after.Profiles, 1, string(b))
		return after.Profiles[0].InUseBy == ""
	}, 10*time.Second, 20*time.Millisecond, "the lock is released after the job's end")

	st, b = do(t, "POST", url+"/sessions", `{"profile":"../etc"}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
}
