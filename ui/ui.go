// Package ui is the operator console served at /ui/ by every hub: plain
// ES modules, a stylesheet and one HTML page, embedded in the binary.
// There is no build step (README.md in this folder says why), so `paprika
// up` needs nothing but the Go toolchain.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var files embed.FS

// CSP is the console's Content-Security-Policy: scripts and styles from
// the hub itself only (no inline script, no inline style, no CDN), images
// from the hub, data: (live-view frames) and blob: (assets fetched with
// the token), requests and WebSockets to the hub only, never framed.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes are set explicitly: the OS MIME table a hub runs on may
// not know .mjs or may map .js to something a module script refuses.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handler serves the console under prefix (e.g. "/ui/"): the page for the
// prefix itself and any path without a file (the console routes by its
// URL fragment), and the embedded files by name.
func Handler(prefix string) http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embed pattern names this folder: cannot fail
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, prefix)
		if name == "" || strings.HasSuffix(name, "/") {
			name = "index.html"
		}
		name = path.Clean(name)
		b, err := fs.ReadFile(static, name)
		if err != nil {
			http.Error(w, "no such console file", http.StatusNotFound)
			return
		}
		h := w.Header()
		ct := contentTypes[path.Ext(name)]
		if ct == "" {
			ct = "application/octet-stream"
		}
		h.Set("Content-Type", ct)
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Revalidate every load: a hub upgrade must not leave a stale
		// module graph in an operator's browser.
		h.Set("Cache-Control", "no-cache")
		_, _ = w.Write(b)
	})
}
