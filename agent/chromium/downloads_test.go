package chromium

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/paprika-hub/paprika/messages"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// downloadBytes is the file the download site serves: binary, not text.
var downloadBytes = func() []byte {
	b := make([]byte, 70_000)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}()

// newDownloadSite serves:
//
//	/tall            a page 5000 px tall
//	/dl              a page with <a download> links to /file.bin and /attach
//	/file.bin        downloadBytes as application/octet-stream
//	/attach          downloadBytes with Content-Disposition: attachment; filename="../evil\x01.bin"
//	/auto            a page whose script clicks its own download link on load
func newDownloadSite(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!DOCTYPE html><html><head><title>t</title></head><body style=\"margin:0\">%s</body></html>", body)
	}
	mux.HandleFunc("GET /tall", func(w http.ResponseWriter, r *http.Request) {
		page(w, `<div style="height:5000px;background:linear-gradient(#c00,#00c)">tall</div>`)
	})
	mux.HandleFunc("GET /dl", func(w http.ResponseWriter, r *http.Request) {
		page(w, `<a id="dl" download href="/file.bin">file</a> <a id="attach" href="/attach">attachment</a>`)
	})
	mux.HandleFunc("GET /auto", func(w http.ResponseWriter, r *http.Request) {
		// #done comes a moment after the click, so that the fetch's page
		// work (wait_for) outlasts the start of the download.
		page(w, `<a id="dl" download href="/file.bin">file</a><script>document.getElementById("dl").click();
			setTimeout(() => document.body.append(Object.assign(document.createElement("p"), {id: "done"})), 300)</script>`)
	})
	mux.HandleFunc("GET /file.bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(downloadBytes)
	})
	mux.HandleFunc("GET /attach", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="../evil`+"\x01"+`.bin"`)
		_, _ = w.Write(downloadBytes)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestFetchPDFFullPageAndDownloads drives one lane through the fetch
// mode's pdf and full_page, a macro whose click downloads a file, a fetch
// whose page downloads one by itself, and a session's download.
func TestFetchPDFFullPageAndDownloads(t *testing.T) {
	s := newDownloadSite(t)
	sessUp := &capturingUploader{}
	d, up := newDriver(t, 1, func(c *Config) { c.SessionUpload = sessUp.upload })

	t.Run("pdf and full_page", func(t *testing.T) {
		r := runJob(t, d, 0, "j-pdf", "fetch", map[string]any{"url": s.URL + "/tall", "pdf": true, "full_page": true}, 0)
		resultMap(t, r)
		require.Equal(t, []string{"page.html", "screenshot.png", "page.pdf"}, r.res.Assets)
		pdf := up.asset(t, "j-pdf", "page.pdf")
		require.Equal(t, "application/pdf", pdf.contentType)
		require.True(t, bytes.HasPrefix(pdf.data, []byte("%PDF")), "page.pdf starts with %%PDF: %q", pdf.data[:min(len(pdf.data), 16)])
		cfg, err := png.DecodeConfig(bytes.NewReader(up.asset(t, "j-pdf", "screenshot.png").data))
		require.NoError(t, err)
		require.Equal(t, 5000, cfg.Height, "the whole page, not the %d px viewport", DefaultWindowHeight)
		require.Equal(t, DefaultWindowWidth, cfg.Width)

		// Without full_page the screenshot stays the viewport.
		r = runJob(t, d, 0, "j-view", "fetch", map[string]any{"url": s.URL + "/tall"}, 0)
		resultMap(t, r)
		cfg, err = png.DecodeConfig(bytes.NewReader(up.asset(t, "j-view", "screenshot.png").data))
		require.NoError(t, err)
		require.Equal(t, DefaultWindowHeight, cfg.Height)
	})

	t.Run("a macro's click downloads a file", func(t *testing.T) {
		r := runJob(t, d, 0, "j-dl", "macro", map[string]any{"steps": []map[string]any{
			{"op": "navigate", "url": s.URL + "/dl"},
			{"op": "click", "selector": "#dl"},
			{"op": "click", "selector": "#attach"},
		}}, 0)
		resultMap(t, r)
		require.ElementsMatch(t, []string{"downloads/file.bin", "downloads/_evil_.bin"}, r.res.Assets, "log:\n%s", r.log.text())
		got := up.asset(t, "j-dl", "downloads/file.bin")
		require.Equal(t, downloadBytes, got.data, "the exact bytes")
		require.Equal(t, downloadBytes, up.asset(t, "j-dl", "downloads/_evil_.bin").data,
			"the server's file name loses its path and control characters")
		requireNoDownloadFiles(t, d)
	})

	t.Run("a fetch's page downloads a file by itself", func(t *testing.T) {
		r := runJob(t, d, 0, "j-auto", "fetch", map[string]any{"url": s.URL + "/auto", "screenshot": false, "wait_for": "#done"}, 0)
		resultMap(t, r)
		require.Equal(t, []string{"page.html", "downloads/file.bin"}, r.res.Assets, "log:\n%s", r.log.text())
		require.Equal(t, downloadBytes, up.asset(t, "j-auto", "downloads/file.bin").data)
	})

	t.Run("a session's download is uploaded under the session", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		sess, err := d.OpenSession(ctx, 0, "s-dl", messages.BrowserOptions{})
		require.NoError(t, err)
		do := func(cmd map[string]any) {
			raw, _ := json.Marshal(cmd)
			_, err := sess.Do(ctx, raw)
			require.NoError(t, err)
		}
		do(map[string]any{"op": "navigate", "url": s.URL + "/dl"})
		do(map[string]any{"op": "click", "selector": "#dl"})
		do(map[string]any{"op": "click", "selector": "#dl"})
		waitFor(t, func() bool {
			sessUp.mu.Lock()
			defer sessUp.mu.Unlock()
			return len(sessUp.got) == 2
		})
		require.Equal(t, downloadBytes, sessUp.asset(t, "s-dl", "file.bin").data)
		require.Equal(t, downloadBytes, sessUp.asset(t, "s-dl", "file (2).bin").data, "a second file of one name gets its own")
		require.NoError(t, sess.Close())
		requireNoDownloadFiles(t, d)
	})
}

// requireNoDownloadFiles checks that no download is left on the worker's
// disk under the lane's profile.
func requireNoDownloadFiles(t *testing.T, d *Driver) {
	t.Helper()
	var left []string
	_ = filepath.Walk(d.workDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.Contains(p, "paprika-downloads") && !info.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	require.Empty(t, left)
}

func TestSanitizeFilename(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ suggested, url, want string }{
		{"report.pdf", "", "report.pdf"},
		{"", "http://h/a/b/data.csv?x=1", "data.csv"},
		{"../../etc/passwd", "", "_.._etc_passwd"},
		{"..\\x.bin", "", "_x.bin"},
		{".hidden", "", "hidden"},
		{"a\x00b\x1b[31m\u202eexe.txt", "", "a_b[31mexe.txt"},
		{"", "http://h/", "download"},
		{"...", "", "download"},
		{"bad\xffutf8.bin", "", "bad_utf8.bin"},
		{strings.Repeat("é", 100) + ".tar.gz", "", strings.Repeat("é", 58) + ".gz"},
	} {
		got := sanitizeFilename(c.suggested, c.url)
		require.Equal(t, c.want, got, "%q %q", c.suggested, c.url)
		require.LessOrEqual(t, len(got), maxDownloadName)
	}
	taken := map[string]bool{"a.bin": true, "a (2).bin": true}
	require.Equal(t, "a (3).bin", uniqueName("a.bin", taken))
	require.Equal(t, "b.bin", uniqueName("b.bin", taken))
}
