package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, p string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler("/ui/").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
	return rec
}

// TestConsoleFilesAndHeaders: the page, its modules and its stylesheet
// are served with their types and the security headers; a path with no
// file is a 404, and ../ cannot leave the embedded folder.
func TestConsoleFilesAndHeaders(t *testing.T) {
	for p, ct := range map[string]string{"/ui/": "text/html", "/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		rec := get(t, p)
		require.Equal(t, http.StatusOK, rec.Code, p)
		require.True(t, strings.HasPrefix(rec.Header().Get("Content-Type"), ct), p)
		require.Equal(t, CSP, rec.Header().Get("Content-Security-Policy"))
		require.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"))
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
	}
	require.Equal(t, http.StatusNotFound, get(t, "/ui/nope.js").Code)
	require.Equal(t, http.StatusNotFound, get(t, "/ui/../ui.go").Code)
}

// TestConsoleNeedsNothingTheCSPForbids: no inline script, no inline
// style attribute, no script or stylesheet from another origin, and every
// module a module imports is embedded (no build step fills the gaps).
func TestConsoleNeedsNothingTheCSPForbids(t *testing.T) {
	require.Contains(t, CSP, "script-src 'self';")
	require.NotContains(t, CSP, "unsafe-inline")
	static, err := fs.Sub(files, "static")
	require.NoError(t, err)
	page, err := fs.ReadFile(static, "index.html")
	require.NoError(t, err)
	require.NotRegexp(t, `<script(\s[^>]*)?>\s*[^<\s]`, string(page), "inline script")
	require.NotRegexp(t, `\sstyle=`, string(page), "inline style")
	require.NotRegexp(t, `(src|href)="(https?:)?//`, string(page), "another origin")
	imports := regexp.MustCompile(`(?m)^import .* from '\./([^']+)';`)
	names, err := fs.Glob(static, "*.js")
	require.NoError(t, err)
	require.Contains(t, names, "app.js")
	for _, n := range names {
		b, err := fs.ReadFile(static, n)
		require.NoError(t, err)
		for _, m := range imports.FindAllStringSubmatch(string(b), -1) {
			_, err := fs.Stat(static, path.Clean(m[1]))
			require.NoError(t, err, "%s imports %s", n, m[1])
		}
		require.NotContains(t, string(b), "innerHTML", "%s: the console builds the DOM, it never parses strings as HTML", n)
	}
}
