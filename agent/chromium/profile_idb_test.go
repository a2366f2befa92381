package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// memProfiles is a profile store in memory, as the hub's is to a worker.
type memProfiles struct {
	mu    sync.Mutex
	state map[string][]byte
}

func (m *memProfiles) load(_ context.Context, name, _ string, _ int) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state[name], nil
}

func (m *memProfiles) save(_ context.Context, name, _ string, _ int, b []byte) error {
	if _, err := messages.ParseProfileState(b); err != nil {
		return err // what the hub would answer 400 to
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state[name] = b
	return nil
}

// idbSite: /write creates database "app" (store "notes" with in-line keys
// and an index, store "misc" with out-of-line keys, a Blob among its
// values); /read reads them from a script that runs while the page
// parses, and shows what it found in its title.
// Any other path but the favicon counts in others: a seed of the site's origin must not
// reach it.
func idbSite(t *testing.T, others *atomic.Int64) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/favicon.ico":
			http.NotFound(w, r)
		default:
			others.Add(1)
			http.NotFound(w, r)
		case "/write":
			fmt.Fprint(w, `<!doctype html><title>write</title><script>
const o = indexedDB.open("app", 3);
o.onupgradeneeded = () => {
	const notes = o.result.createObjectStore("notes", {keyPath: "id"});
	notes.createIndex("by_tag", "tag", {unique: false});
	o.result.createObjectStore("misc");
};
o.onsuccess = () => {
	const tx = o.result.transaction(["notes", "misc"], "readwrite");
	const notes = tx.objectStore("notes"), misc = tx.objectStore("misc");
	notes.put({id: 1, tag: "a", when: new Date(1700000000000), bytes: new Uint8Array([1, 2, 250])});
	notes.put({id: 2, tag: "b", m: new Map([["k", new Set([7, 0])]]), z: -0, u: undefined, n: NaN, big: 12n});
	misc.put("plain", new Uint8Array([9]).buffer);
	misc.put(new Blob(["x"]), "blob");
	tx.oncomplete = () => {
		// What the page does to its own world does not hide its data
		// from the export (an isolated world).
		IDBFactory.prototype.databases = async () => [];
		const p = document.createElement("p"); p.id = "done"; document.body.appendChild(p);
	};
};
</script>`)
		case "/read":
			fmt.Fprint(w, `<!doctype html><title>-</title><script>
// Runs while the page parses: the databases must be there already.
const o = indexedDB.open("app");
o.onupgradeneeded = () => { document.title = "missing"; };
o.onsuccess = () => {
	const db = o.result;
	if (db.version !== 3) { document.title = "version " + db.version; return; }
	const tx = db.transaction(["notes", "misc"]);
	const one = tx.objectStore("notes").get(1);
	const byTag = tx.objectStore("notes").index("by_tag").get("b");
	const plain = tx.objectStore("misc").get(new Uint8Array([9]).buffer);
	const blob = tx.objectStore("misc").count("blob");
	tx.oncomplete = () => {
		const a = one.result, b = byTag.result;
		const set = b.m.get("k");
		document.title = [a.when instanceof Date ? a.when.toISOString() : "no date",
			a.bytes instanceof Uint8Array ? Array.from(a.bytes).join(".") : "no bytes",
			b.id, set instanceof Set && set.has(7) && set.has(0) ? "set" : "no set", Object.is(b.z, -0) ? "-0" : "no -0",
			"u" in b && b.u === undefined ? "undef" : "no undef", Number.isNaN(b.n) ? "nan" : "no nan",
			typeof b.big === "bigint" ? String(b.big) : "no bigint", plain.result, "blobs=" + blob.result,
			"dbs=" + db.objectStoreNames.length].join(" ");
		const p = document.createElement("p"); p.id = "done"; document.body.appendChild(p);
	};
};
</script>`)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestProfileIndexedDBRoundTrip: a page's IndexedDB (stores, an index,
// a Date, a Uint8Array, a Map of a Set, …) saved at one job's end is in
// place, on another lane, before the next job's page runs its scripts;
// a Blob is left out with a log line; an origin the page did not show
// keeps what the profile had, and its seed reaches no network (the
// origin does not resolve).
func TestProfileIndexedDBRoundTrip(t *testing.T) {
	var others atomic.Int64
	site := idbSite(t, &others)
	other := `{"cookies":[],"local_storage":{},"indexed_db":{"https://paprika-other.invalid":[{"name":"o","version":1,
		"stores":[{"name":"s","key_path":null,"records":[{"k":"x","v":{"$":"obj","v":{"a":1}}}]}]}]}}`
	store := &memProfiles{state: map[string][]byte{"p1": []byte(other)}}
	d, _ := newDriver(t, 2, func(c *Config) { c.ProfileLoad, c.ProfileSave = store.load, store.save })

	write := runJob(t, d, 0, "idb-1", messages.ModeFetch, map[string]any{"url": site.URL + "/write", "wait_for": "#done",
		"screenshot": false, "profile": "p1"}, 0)
	require.NoError(t, write.err, write.log.text())
	logText := write.log.text()
	require.Contains(t, logText, "profile p1 restored: 0 cookies, localStorage of 0 origins, IndexedDB of 1 origins (1 records)")
	require.Contains(t, logText, `IndexedDB of `+site.URL+`: 1 records not kept ("app"/"misc": Blob)`)
	require.Contains(t, logText, "IndexedDB of 2 origins (4 records)")
	require.NotContains(t, logText, "paprika-other.invalid/", "the seed is no page visit of the job")

	st, err := messages.ParseProfileState(store.state["p1"])
	require.NoError(t, err)
	require.Contains(t, st.IndexedDB, "https://paprika-other.invalid", "other origins keep what the profile had")
	dbs := st.IndexedDB[site.URL]
	require.Len(t, dbs, 1)
	require.Equal(t, "app", dbs[0].Name)
	require.Equal(t, int64(3), dbs[0].Version)
	raw, err := json.Marshal(dbs[0])
	require.NoError(t, err)
	for _, want := range []string{`"$":"date","v":1700000000000`, `"$":"view","k":"Uint8Array","v":"AQL6"`, `"key_path":"tag"`,
		`"$":"map"`, `"$":"set"`, `"$":"n","v":"-0"`, `"$":"big","v":"12"`, `"k":{"$":"ab","v":"CQ=="}`} {
		require.Contains(t, string(raw), want)
	}

	// Lane 1 never saw the site: a fresh browser and BrowserContext.
	read := runJob(t, d, 1, "idb-2", messages.ModeFetch, map[string]any{"url": site.URL + "/read", "wait_for": "#done",
		"screenshot": false, "profile": "p1"}, 0)
	res := resultMap(t, read)
	require.Equal(t, "2023-11-14T22:13:20.000Z 1.2.250 2 set -0 undef nan 12 plain blobs=0 dbs=2", res["title"], read.log.text())
	require.Contains(t, read.log.text(), "IndexedDB of 2 origins (4 records)")
	require.Equal(t, site.URL+"/read", res["final_url"])
	require.False(t, strings.Contains(read.log.text(), "navigate https://paprika-other.invalid"))
	require.Zero(t, others.Load(), "the seed of the site's origin was answered in the browser")
}

// TestProfileIndexedDBRestoreFails: a state that passes the hub's check
// but does not restore (two records breaking a unique index) fails the
// job before its page loads, and says why.
func TestProfileIndexedDBRestoreFails(t *testing.T) {
	var others atomic.Int64
	site := idbSite(t, &others)
	forged := `{"cookies":[],"local_storage":{},"indexed_db":{"` + site.URL + `":[{"name":"app","version":1,
		"stores":[{"name":"s","key_path":"id","indexes":[{"name":"u","key_path":"x","unique":true}],
		"records":[{"k":1,"v":{"$":"obj","v":{"id":1,"x":"same"}}},{"k":2,"v":{"$":"obj","v":{"id":2,"x":"same"}}}]}]}]}}`
	_, err := messages.ParseProfileState([]byte(forged))
	require.NoError(t, err)
	store := &memProfiles{state: map[string][]byte{"p2": []byte(forged)}}
	d, _ := newDriver(t, 1, func(c *Config) { c.ProfileLoad, c.ProfileSave = store.load, store.save })
	r := runJob(t, d, 0, "idb-3", messages.ModeFetch, map[string]any{"url": site.URL + "/read", "screenshot": false, "profile": "p2"}, 0)
	require.Error(t, r.err)
	require.Equal(t, "job_error", r.reason())
	require.Contains(t, r.err.Error(), "IndexedDB of "+site.URL)
	require.Contains(t, r.err.Error(), "ConstraintError")
	require.Zero(t, others.Load())
	require.Equal(t, forged, string(store.state["p2"]), "a failed job saves nothing")
}
