package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"github.com/paprika-hub/paprika/agent"
	"github.com/paprika-hub/paprika/messages"
)

// ProfileLoadFunc reads the state of profile name for one attempt of a
// job, or for a session (holder messages.SessionSlotPrefix and its id;
// attempt 0): the hub's fence. A nil state and no error: the profile has
// none yet. agent.(*Agent).LoadProfile has this shape.
type ProfileLoadFunc func(ctx context.Context, name, holder string, attempt int) ([]byte, error)

// ProfileSaveFunc writes the state of profile name from one attempt of a
// job, or from a session (holder as for ProfileLoadFunc).
// agent.(*Agent).SaveProfile has this shape.
type ProfileSaveFunc func(ctx context.Context, name, holder string, attempt int, state []byte) error

// restoredMark is the sessionStorage key the restore script sets in an
// origin once it seeded that origin's localStorage, so a second document
// of the origin in the same tab keeps what the first one changed.
const restoredMark = "__paprika_profile_restored"

// restoreScript seeds localStorage of the document's origin from items
// (origin → key → value) before any of the page's scripts run.
func restoreScript(items map[string]map[string]string) (string, error) {
	b, err := json.Marshal(items)
	if err != nil {
		return "", err
	}
	return `(function(){var all=` + string(b) + `;var it=all[location.origin];if(!it)return;try{` +
		`if(sessionStorage.getItem("` + restoredMark + `"))return;` +
		`for(var k in it){localStorage.setItem(k,it[k]);}` +
		`sessionStorage.setItem("` + restoredMark + `","1");}catch(e){}})();`, nil
}

// restoreProfile loads the profile of holder (a job's id under attempt,
// or a session's slot key; ProfileLoadFunc) into the tab before its first
// navigation: the cookies into the tab's BrowserContext, the IndexedDB
// through a locally answered page of each of its origins
// (profile_idb.go), the localStorage through a script that runs at the
// start of each new document. It returns the state, which saveProfile
// updates.
func (d *Driver) restoreProfile(ctx context.Context, t *tab, holder string, attempt int, name string, log func(string)) (messages.ProfileState, error) {
	var st messages.ProfileState
	if d.cfg.ProfileLoad == nil || d.cfg.ProfileSave == nil {
		return st, agent.Fail(agent.ReasonLaneError, "profile %s: this worker is not configured to load and save profiles", name)
	}
	raw, err := d.cfg.ProfileLoad(ctx, name, holder, attempt)
	if err != nil {
		return st, agent.Fail(agent.ReasonLaneError, "%v", err)
	}
	if raw != nil {
		if st, err = messages.ParseProfileState(raw); err != nil {
			return st, agent.Fail(agent.ReasonJobError, "profile %s: %v", name, err)
		}
	}
	if st.LocalStorage == nil {
		st.LocalStorage = map[string]map[string]string{}
	}
	rctx, done := t.bind(ctx)
	defer done()
	if len(st.Cookies) > 0 {
		if _, err := chromedp.CallBrowser(rctx, storage.SetCookies, storage.SetCookiesParams{Cookies: cookieParams(st.Cookies), BrowserContextID: t.bcID}); err != nil {
			return st, failure(t.failure(rctx, err), "profile "+name+": restore cookies")
		}
	}
	idbRecs, err := d.restoreIndexedDB(rctx, t, st.IndexedDB)
	if err != nil {
		return st, failure(t.failure(rctx, err), "profile "+name+": restore")
	}
	if len(st.LocalStorage) > 0 {
		src, err := restoreScript(st.LocalStorage)
		if err != nil {
			return st, fmt.Errorf("profile %s: %w", name, err)
		}
		if _, err := chromedp.Call(rctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
			return st, failure(t.failure(rctx, err), "profile "+name+": restore localStorage")
		}
	}
	log(fmt.Sprintf("profile %s restored: %d cookies, localStorage of %d origins, IndexedDB of %d origins (%d records)",
		name, len(st.Cookies), len(st.LocalStorage), len(st.IndexedDB), idbRecs))
	return st, nil
}

// pageStorageJS reads the current document's origin and localStorage.
const pageStorageJS = `(function(){var o={origin:location.origin,items:{}};try{for(var i=0;i<localStorage.length;i++){var k=localStorage.key(i);o.items[k]=localStorage.getItem(k);}}catch(e){o.origin="";}return JSON.stringify(o);})()`

// saveProfile exports the tab's storage into st and hands it to the hub:
// every cookie of the tab's BrowserContext, and the localStorage and
// IndexedDB of the page's origin at the end (other origins keep what the
// profile had).
func (d *Driver) saveProfile(ctx context.Context, t *tab, holder string, attempt int, name string, st messages.ProfileState, log func(string)) error {
	rctx, done := t.bind(ctx)
	defer done()
	res, err := chromedp.CallBrowser(rctx, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: t.bcID})
	if err != nil {
		return failure(t.failure(rctx, err), "profile "+name+": read cookies")
	}
	st.Cookies = st.Cookies[:0]
	for _, c := range res.Cookies {
		mc := messages.Cookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Secure: c.Secure,
			HTTPOnly: c.HTTPOnly, SameSite: string(c.SameSite)}
		if !c.Session && c.Expires > 0 {
			mc.Expires = c.Expires
		}
		st.Cookies = append(st.Cookies, mc)
	}
	raw, err := chromedp.Run(rctx, chromedp.Evaluate[string](pageStorageJS))
	if err != nil {
		return failure(t.failure(rctx, err), "profile "+name+": read localStorage")
	}
	var cur struct {
		Origin string            `json:"origin"`
		Items  map[string]string `json:"items"`
	}
	if err := json.Unmarshal([]byte(raw), &cur); err != nil {
		return fmt.Errorf("profile %s: read localStorage: %w", name, err)
	}
	if u, err := url.Parse(cur.Origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		if len(cur.Items) == 0 {
			delete(st.LocalStorage, cur.Origin)
		} else {
			st.LocalStorage[cur.Origin] = cur.Items
		}
	}
	idbOrigin, err := d.exportIndexedDB(rctx, t, &st, log)
	if err != nil {
		return failure(t.failure(rctx, err), "profile "+name+": read IndexedDB")
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("profile %s: encode: %w", name, err)
	}
	if _, err := messages.ParseProfileState(b); err != nil && idbOrigin != "" {
		// What the page's databases hold (their size, a key path the
		// hub's check does not take) must not cost the job its cookies.
		log(fmt.Sprintf("IndexedDB of %s not kept: %v", idbOrigin, err))
		delete(st.IndexedDB, idbOrigin)
		if b, err = json.Marshal(st); err != nil {
			return fmt.Errorf("profile %s: encode: %w", name, err)
		}
	}
	if _, err := messages.ParseProfileState(b); err != nil {
		return agent.Fail(agent.ReasonJobError, "profile %s: %v", name, err)
	}
	if err := d.cfg.ProfileSave(ctx, name, holder, attempt, b); err != nil {
		return agent.Fail(agent.ReasonLaneError, "%v", err)
	}
	log(fmt.Sprintf("profile %s saved: %d cookies, localStorage of %d origins, IndexedDB of %d origins (%d records), %d bytes",
		name, len(st.Cookies), len(st.LocalStorage), len(st.IndexedDB), idbRecords(st.IndexedDB), len(b)))
	return nil
}
