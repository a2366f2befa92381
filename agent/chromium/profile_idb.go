package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/messages"
)

// IndexedDB in a profile (README "Profiles and affinity").
//
// Export and import are scripts evaluated in the page (awaitPromise), not
// the CDP IndexedDB domain: IndexedDB.requestData hands back keys as a
// protocol Key (no binary keys) and values as RemoteObjects, one
// Runtime call each to serialize, and the domain has no way to write at
// all, so the restore needs a page script anyway. One script per origin
// reads everything in two transactions and encodes it in the tagged JSON
// of messages.IDBValueTags, which its twin decodes. The export runs in an
// isolated world of the page, so a page that replaced indexedDB, JSON or
// the prototypes of its own world does not change what is read; the
// values it reads are clones made in that world, with no page getters.
//
// A restore must be in place before the page's own scripts run, and
// IndexedDB is asynchronous, so an init script cannot promise it. Before
// the job's first navigation the tab is sent, for each origin with
// databases, to origin + "/", a document the tab's own Fetch interception
// (the egress guard's, tab.go) answers itself with an empty page; no
// request leaves the browser, so there is nothing for the egress policy to
// judge, and any other request while seeding fails. The restore script
// runs in that document, then the tab goes back to about:blank with its
// history reset, and the job navigates as if nothing happened (the job's
// log has one line for the restore, no page visit).

// seedHTML is the document every seed navigation gets.
const seedHTML = "<!doctype html><html><head><title></title></head><body></body></html>"

// seedFulfilled answers a paused request while the tab seeds an origin:
// the seed document itself is fulfilled locally, anything else fails. It
// reports false when the tab is not seeding (the request is judged as
// usual).
func (t *tab) seedFulfilled(ev fetch.EventRequestPaused) bool {
	seed := t.seed.Load()
	if seed == nil {
		return false
	}
	var u string
	if ev.Request != nil {
		u = ev.Request.URL
	}
	if ev.ResourceType == network.ResourceTypeDocument && ev.FrameID == cdp.FrameID(t.id) && u == *seed {
		_, err := chromedp.Call(t.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: 200,
			ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/html; charset=utf-8"}, {Name: "Cache-Control", Value: "no-store"}},
			Body:            []byte(seedHTML)})
		if err != nil && t.ctx.Err() == nil {
			t.l.d.log.Debug("fulfill the profile's seed document", "lane", t.l.idx, "url", u, "err", err)
		}
		return true
	}
	t.l.d.log.Debug("request failed while seeding a profile's IndexedDB", "lane", t.l.idx, "url", u, "type", ev.ResourceType)
	if _, err := chromedp.Call(t.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient}); err != nil && t.ctx.Err() == nil {
		t.l.d.log.Debug("fail request", "lane", t.l.idx, "url", u, "err", err)
	}
	return true
}

// idbWorld names the isolated world the scripts run in.
const idbWorld = "paprika-profile"

// evalIsolated evaluates expr (a promise) in a fresh isolated world of the
// tab's main frame and returns its string result.
func (t *tab) evalIsolated(ctx context.Context, expr string) (string, error) {
	w, err := chromedp.Call(ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: cdp.FrameID(t.id), WorldName: idbWorld})
	if err != nil {
		return "", fmt.Errorf("isolated world: %w", err)
	}
	return chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise, func(p *runtime.EvaluateParams) {
		p.ContextID = w.ExecutionContextID
	}))
}

// idbCodecJS is the tagged JSON of messages.IDBValueTags: enc(value) and
// dec(json). enc throws a Skip for what it does not carry (Blob, File,
// boxed primitives, Error, CryptoKey, a value that contains itself, …).
const idbCodecJS = `
class Skip extends Error {}
const toTag = (v) => Object.prototype.toString.call(v).slice(8, -1);
const views = {Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
	Float32Array, Float64Array, BigInt64Array, BigUint64Array, DataView};
const put = (o, k, v) => Object.defineProperty(o, k, {value: v, writable: true, enumerable: true, configurable: true});
const b64 = (u8) => { let s = ""; for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000)); return btoa(s); };
const unb64 = (s) => { const b = atob(s); const u = new Uint8Array(b.length); for (let i = 0; i < b.length; i++) u[i] = b.charCodeAt(i); return u; };
const specials = {"NaN": NaN, "Infinity": Infinity, "-Infinity": -Infinity, "-0": -0};
function enc(v, depth, up) {
	if (depth > MAXDEPTH) throw new Skip("nested deeper than " + MAXDEPTH);
	switch (typeof v) {
	case "undefined": return {$: "u"};
	case "boolean": case "string": return v;
	case "number":
		if (Number.isNaN(v)) return {$: "n", v: "NaN"};
		if (v === Infinity) return {$: "n", v: "Infinity"};
		if (v === -Infinity) return {$: "n", v: "-Infinity"};
		if (Object.is(v, -0)) return {$: "n", v: "-0"};
		return v;
	case "bigint": return {$: "big", v: v.toString()};
	}
	if (v === null) return null;
	if (typeof v !== "object") throw new Skip(typeof v);
	if (up.has(v)) throw new Skip("a value that contains itself");
	up.add(v);
	try {
		const t = toTag(v);
		if (Array.isArray(v)) { const a = []; for (let i = 0; i < v.length; i++) a.push(enc(v[i], depth + 1, up)); return a; }
		if (t === "Date") { const ms = v.getTime(); return {$: "date", v: Number.isNaN(ms) ? null : ms}; }
		if (t === "RegExp") return {$: "re", v: v.source, f: v.flags};
		if (t === "ArrayBuffer") return {$: "ab", v: b64(new Uint8Array(v))};
		if (ArrayBuffer.isView(v) && views[t]) return {$: "view", k: t, v: b64(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))};
		if (t === "Map") { const a = []; for (const [k, x] of v) a.push([enc(k, depth + 2, up), enc(x, depth + 2, up)]); return {$: "map", v: a}; }
		if (t === "Set") { const a = []; for (const x of v) a.push(enc(x, depth + 1, up)); return {$: "set", v: a}; }
		const proto = Object.getPrototypeOf(v);
		if (t === "Object" && (proto === Object.prototype || proto === null)) {
			const o = {}; for (const k of Object.keys(v)) put(o, k, enc(v[k], depth + 1, up)); return {$: "obj", v: o};
		}
		throw new Skip(t);
	} finally { up.delete(v); }
}
function dec(v) {
	if (v === null || typeof v !== "object") return v;
	if (Array.isArray(v)) return v.map(dec);
	switch (v.$) {
	case "u": return undefined;
	case "n": if (Object.hasOwn(specials, v.v)) return specials[v.v]; break;
	case "big": return BigInt(v.v);
	case "date": return new Date(v.v === null ? NaN : v.v);
	case "re": return new RegExp(v.v, v.f);
	case "ab": return unb64(v.v).buffer;
	case "view": if (Object.hasOwn(views, v.k)) { const C = views[v.k]; const u = unb64(v.v);
		return C === DataView ? new DataView(u.buffer) : new C(u.buffer, 0, u.byteLength / C.BYTES_PER_ELEMENT); } break;
	case "map": return new Map(v.v.map((p) => [dec(p[0]), dec(p[1])]));
	case "set": return new Set(v.v.map(dec));
	case "obj": { const o = {}; for (const k of Object.keys(v.v)) put(o, k, dec(v.v[k])); return o; }
	}
	throw new Error("unknown tag " + String(v.$).slice(0, 20));
}
const req = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
`

// idbExportJS reads every database of the document's origin. Its
// argument lim bounds what it may return ({dbs, stores, records, bytes});
// past a bound it returns over (why) and no databases. Records whose
// value it cannot carry are left out and counted in skipped.
const idbExportJS = `(async function(lim) {
const MAXDEPTH = lim.depth;
` + idbCodecJS + `
const out = {origin: location.origin, dbs: [], skipped: {}, over: ""};
if (!/^https?:$/.test(location.protocol) || !self.indexedDB || !indexedDB.databases) return JSON.stringify(out);
const list = await indexedDB.databases();
if (list.length > lim.dbs) { out.over = list.length + " databases, at most " + lim.dbs; return JSON.stringify(out); }
let records = 0, bytes = 0;
for (const info of list) {
	let db;
	try {
		db = await new Promise((res, rej) => {
			const r = indexedDB.open(info.name);
			// Gone since databases() listed it: do not create it.
			r.onupgradeneeded = () => r.transaction.abort();
			r.onsuccess = () => res(r.result);
			r.onerror = () => rej(r.error);
		});
	} catch (e) { continue; }
	try {
		const names = Array.from(db.objectStoreNames);
		if (names.length > lim.stores) { out.over = "database " + JSON.stringify(db.name) + ": " + names.length + " object stores, at most " + lim.stores; break; }
		const d = {name: db.name, version: db.version, stores: []};
		if (names.length > 0) {
			// Counted first, so that a huge store is not read into memory.
			let tx = db.transaction(names, "readonly");
			const counts = await Promise.all(names.map((n) => req(tx.objectStore(n).count())));
			const n = counts.reduce((a, b) => a + b, 0);
			if (records + n > lim.records) { out.over = "more than " + lim.records + " records"; break; }
			tx = db.transaction(names, "readonly");
			const reads = names.map((n) => { const s = tx.objectStore(n);
				return Promise.all([req(s.getAllKeys(null, lim.records + 1)), req(s.getAll(null, lim.records + 1))]); });
			const got = await Promise.all(reads);
			for (let i = 0; i < names.length; i++) {
				const s = tx.objectStore(names[i]);
				const st = {name: s.name, key_path: s.keyPath, auto_increment: s.autoIncrement, indexes: [], records: []};
				for (const iname of Array.from(s.indexNames)) {
					const ix = s.index(iname);
					st.indexes.push({name: ix.name, key_path: ix.keyPath, unique: ix.unique, multi_entry: ix.multiEntry});
				}
				const [keys, vals] = got[i];
				records += keys.length;
				if (records > lim.records) { out.over = "more than " + lim.records + " records"; break; }
				for (let k = 0; k < keys.length; k++) {
					let r;
					try { r = {k: enc(keys[k], 0, new Set()), v: enc(vals[k], 0, new Set())}; }
					catch (e) {
						if (!(e instanceof Skip)) throw e;
						const where = JSON.stringify(db.name) + "/" + JSON.stringify(s.name) + ": " + e.message;
						out.skipped[where] = (out.skipped[where] || 0) + 1;
						continue;
					}
					bytes += JSON.stringify(r).length;
					st.records.push(r);
				}
				d.stores.push(st);
			}
		}
		if (out.over) break;
		if (bytes > lim.bytes) { out.over = "more than " + lim.bytes + " bytes"; break; }
		out.dbs.push(d);
	} finally { db.close(); }
}
if (out.over) out.dbs = [];
return JSON.stringify(out);
})`

// idbRestoreJS replaces the document origin's databases named in dbs
// (messages.IDBDatabase as JSON) with their stores, indexes and records.
const idbRestoreJS = `(async function(dbs) {
const MAXDEPTH = 0;
` + idbCodecJS + `
let n = 0;
for (const d of dbs) {
	await new Promise((res, rej) => { const r = indexedDB.deleteDatabase(d.name); r.onsuccess = res; r.onerror = () => rej(r.error);
		r.onblocked = () => rej(new Error("database " + JSON.stringify(d.name) + " is in use")); });
	const db = await new Promise((res, rej) => {
		const r = indexedDB.open(d.name, d.version);
		r.onupgradeneeded = () => {
			for (const s of d.stores) {
				const os = r.result.createObjectStore(s.name, {keyPath: s.key_path, autoIncrement: !!s.auto_increment});
				for (const ix of s.indexes || []) os.createIndex(ix.name, ix.key_path, {unique: !!ix.unique, multiEntry: !!ix.multi_entry});
			}
		};
		r.onsuccess = () => res(r.result);
		r.onerror = () => rej(r.error);
		r.onblocked = () => rej(new Error("database " + JSON.stringify(d.name) + " is in use"));
	});
	try {
		if (d.stores.length > 0) {
			await new Promise((res, rej) => {
				const tx = db.transaction(d.stores.map((s) => s.name), "readwrite");
				tx.oncomplete = res;
				tx.onabort = () => rej(tx.error || new Error("aborted"));
				try {
					for (const s of d.stores) {
						const os = tx.objectStore(s.name);
						for (const r of s.records) {
							if (s.key_path === null) os.put(dec(r.v), dec(r.k)); else os.put(dec(r.v));
							n++;
						}
					}
				} catch (e) { rej(e); try { tx.abort(); } catch (_) {} }
			});
		}
	} finally { db.close(); }
}
return String(n);
})`

// idbExport is what idbExportJS returns.
type idbExport struct {
	Origin  string                 `json:"origin"`
	DBs     []messages.IDBDatabase `json:"dbs"`
	Skipped map[string]int         `json:"skipped"`
	Over    string                 `json:"over"`
}

// restoreIndexedDB puts the databases of each origin of idb in place, one
// seed navigation per origin (see the top of this file), and leaves the
// tab on about:blank with no history. It returns the records written.
func (d *Driver) restoreIndexedDB(ctx context.Context, t *tab, idb map[string][]messages.IDBDatabase) (int, error) {
	if len(idb) == 0 {
		return 0, nil
	}
	if len(idb) > messages.MaxProfileIDBOrigins {
		// ParseProfileState refused it already; kept as the bound's guard here.
		return 0, fmt.Errorf("IndexedDB of %d origins, at most %d", len(idb), messages.MaxProfileIDBOrigins)
	}
	defer t.seed.Store(nil)
	total := 0
	for _, origin := range slices.Sorted(maps.Keys(idb)) {
		dbs := idb[origin]
		if len(dbs) == 0 {
			continue
		}
		n, err := d.seedOrigin(ctx, t, origin, dbs)
		if err != nil {
			return total, fmt.Errorf("IndexedDB of %s: %w", origin, err)
		}
		total += n
	}
	t.seed.Store(nil)
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StepTimeout)
	defer cancel()
	if err := chromedp.Do(sctx, chromedp.Navigate("about:blank")); err != nil {
		return total, fmt.Errorf("leave the seed page: %w", err)
	}
	if _, err := chromedp.Call(sctx, page.ResetNavigationHistory, cdp.Empty{}); err != nil {
		return total, fmt.Errorf("reset the history: %w", err)
	}
	return total, nil
}

// seedOrigin navigates the tab to origin's locally fulfilled seed
// document and runs the restore script there.
func (d *Driver) seedOrigin(ctx context.Context, t *tab, origin string, dbs []messages.IDBDatabase) (int, error) {
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StepTimeout)
	defer cancel()
	u := origin + "/"
	t.seed.Store(&u)
	if err := chromedp.Do(sctx, chromedp.Navigate(u)); err != nil {
		return 0, fmt.Errorf("open the seed page: %w", err)
	}
	// The seed document must be the one in the tab (a failed fulfill
	// would leave an error page, of another origin).
	got, err := chromedp.Run(sctx, chromedp.Evaluate[string]("location.origin"))
	if err != nil {
		return 0, fmt.Errorf("open the seed page: %w", err)
	}
	if got != origin {
		return 0, fmt.Errorf("the seed page shows origin %q", got)
	}
	arg, err := json.Marshal(dbs)
	if err != nil {
		return 0, err
	}
	res, err := t.evalIsolated(sctx, idbRestoreJS+"("+string(arg)+")")
	if err != nil {
		return 0, fmt.Errorf("restore script: %w", err)
	}
	var n int
	_, _ = fmt.Sscan(res, &n)
	return n, nil
}

// exportIndexedDB reads the IndexedDB of the origin the tab shows and
// merges it into st (other origins keep theirs), within the bounds that
// are left once the rest of st is counted. What it leaves out it says in
// the job's log. It returns the origin whose databases it put in st, "" for
// none.
func (d *Driver) exportIndexedDB(ctx context.Context, t *tab, st *messages.ProfileState, log func(string)) (string, error) {
	others, records := len(st.IndexedDB), idbRecords(st.IndexedDB)
	rest, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	lim := map[string]int{"dbs": messages.MaxProfileIDBDatabases, "stores": messages.MaxProfileIDBStores,
		"records": messages.MaxProfileIDBRecords - records, "bytes": messages.MaxProfileStateBytes - len(rest),
		"depth": messages.MaxProfileIDBDepth}
	arg, err := json.Marshal(lim)
	if err != nil {
		return "", err
	}
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StepTimeout)
	defer cancel()
	raw, err := t.evalIsolated(sctx, idbExportJS+"("+string(arg)+")")
	if err != nil {
		if ctx.Err() != nil || t.b.ctx.Err() != nil || t.crashed.Load() {
			return "", err // the job's end or the lane's fault: the caller reports it
		}
		// A database the page keeps busy (a blocked upgrade never lets an
		// open through) or one that fails to read costs the profile this
		// origin's update, not the job its result or its cookies.
		log(fmt.Sprintf("IndexedDB of the page's origin not kept (the profile keeps what it had): %v", err))
		return "", nil
	}
	var ex idbExport
	if err := json.Unmarshal([]byte(raw), &ex); err != nil {
		return "", fmt.Errorf("decode: %w", err)
	}
	if checkOriginOK(ex.Origin) != nil {
		return "", nil // about:blank, data:, an error page: no origin to keep
	}
	for _, where := range slices.Sorted(maps.Keys(ex.Skipped)) {
		log(fmt.Sprintf("IndexedDB of %s: %d records not kept (%s)", ex.Origin, ex.Skipped[where], where))
	}
	_, had := st.IndexedDB[ex.Origin]
	delete(st.IndexedDB, ex.Origin)
	switch {
	case ex.Over != "":
		log(fmt.Sprintf("IndexedDB of %s not kept: %s", ex.Origin, ex.Over))
	case len(ex.DBs) == 0:
	case !had && others >= messages.MaxProfileIDBOrigins:
		log(fmt.Sprintf("IndexedDB of %s not kept: the profile holds the IndexedDB of %d origins, at most %d", ex.Origin, others, messages.MaxProfileIDBOrigins))
	default:
		if st.IndexedDB == nil {
			st.IndexedDB = map[string][]messages.IDBDatabase{}
		}
		st.IndexedDB[ex.Origin] = ex.DBs
		return ex.Origin, nil
	}
	return "", nil
}

// checkOriginOK accepts the http(s) origins a profile keeps storage of.
func checkOriginOK(o string) error {
	if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
		return fmt.Errorf("%q is not an http(s) origin", o)
	}
	return nil
}

// idbRecords counts the records of a state's IndexedDB.
func idbRecords(idb map[string][]messages.IDBDatabase) (records int) {
	for _, dbs := range idb {
		for _, db := range dbs {
			for _, s := range db.Stores {
				records += len(s.Records)
			}
		}
	}
	return records
}
