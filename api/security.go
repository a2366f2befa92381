package api

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/paprika-hub/paprika/persistence"
)

// guardHost refuses a request whose Host header names neither this machine
// (localhost, a loopback IP) nor hub.advertise_url's host, when the API has
// no token. That is DNS rebinding: a page on attacker.example, re-resolved
// to 127.0.0.1, would otherwise read and drive an open hub from the
// victim's browser, and the only trace of it is the attacker's name in
// Host. IP literals pass: a browser sends one only for a page served from
// that very address, which rebinding cannot produce. With a token the token
// protects and every Host is served (proxies, LAN names).
func (s *Server) guardHost(next http.Handler) http.Handler {
	if s.opts.APIToken != "" {
		return next
	}
	advertised := ""
	if u, err := url.Parse(s.opts.AdvertiseURL); err == nil && s.opts.AdvertiseURL != "" {
		advertised = u.Hostname()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowedHost(r.Host, advertised) {
			writeError(w, Errorf(http.StatusMisdirectedRequest, "bad_host",
				"Host %q is not this hub (use localhost, an IP address or hub.advertise_url, or set auth.api_token)", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowedHost reports whether the Host header hostport may reach an open
// hub (see guardHost).
func allowedHost(hostport, advertised string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	switch {
	case host == "":
		return false
	case strings.EqualFold(host, "localhost"):
		return true
	case net.ParseIP(host) != nil:
		return true
	default:
		return advertised != "" && strings.EqualFold(host, advertised)
	}
}

// requireJSON answers 415 to a state-changing API request whose
// Content-Type is not application/json. A cross-site page can send a form
// or a no-cors fetch (urlencoded, multipart, text/plain or no type at all)
// without a CORS preflight; it cannot send application/json without one,
// and the hub answers no preflight, so this header is what keeps another
// site's page from submitting or cancelling jobs on an open hub.
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		if ct == "application/json" { // what clients send: no parse, no map
			next.ServeHTTP(w, r)
			return
		}
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			writeError(w, Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
				"%s %s needs Content-Type: application/json (got %q)", r.Method, r.URL.Path, r.Header.Get("Content-Type")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// stateChanging reports whether a route pattern ("POST /jobs") changes
// state, so it takes requireJSON.
func stateChanging(pattern string) bool {
	method, _, _ := strings.Cut(pattern, " ")
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// bearerToken returns the credentials of an "Authorization: Bearer <token>"
// header. The scheme is case-insensitive (RFC 9110 §11.1), so "bearer" from
// a hand-written client is accepted too.
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// activeTypes are the media types a browser runs script in (or renders
// with access to the origin): an asset of one of these types, stored by a
// worker from whatever page it fetched, must never render as the hub.
var activeTypes = map[string]bool{
	"text/html":             true,
	"application/xhtml+xml": true,
	"image/svg+xml":         true,
	"text/xml":              true,
	"application/xml":       true,
	"text/xsl":              true,
}

// activeExts are the file name endings of the same types, for an asset
// stored with a missing or wrong content type.
var activeExts = map[string]bool{
	".html": true, ".htm": true, ".xhtml": true, ".xht": true, ".shtml": true,
	".svg": true, ".svgz": true, ".xml": true, ".xsl": true, ".xslt": true,
}

// isActive reports whether an asset would be active content in a browser
// by its content type or by its name.
func isActive(contentType, name string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	mt = strings.ToLower(mt)
	return activeTypes[mt] || strings.HasSuffix(mt, "+xml") || activeExts[strings.ToLower(path.Ext(name))]
}

// setAssetHeaders makes an asset download inert on the hub's origin: the
// browser may not sniff another type (nosniff), runs no script and gets an
// opaque origin even if it renders the file (CSP sandbox), and active types
// are saved rather than shown (attachment). Images, text and the like stay
// inline so the UI and a browser can still show screenshots.
func setAssetHeaders(h http.Header, contentType, name string) {
	if contentType == "" {
		// Unset, net/http would sniff the first bytes and could say text/html.
		contentType = "application/octet-stream"
	}
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	disp := "inline"
	// A page's download is whatever its server sent: always saved.
	folder, file := persistence.SplitAssetPath(name)
	if isActive(contentType, name) || folder == persistence.AssetFolderDownloads {
		disp = "attachment"
	}
	h.Set("Content-Disposition", mime.FormatMediaType(disp, map[string]string{"filename": file}))
}

// decodeBody decodes exactly one JSON value from dec into v: data after it
// (a second object, stray bytes) is an error, so a body is read one way by
// every parser on its path. An empty body is io.EOF, for the caller to allow.
func decodeBody(dec *json.Decoder, v any) error {
	if err := dec.Decode(v); err != nil {
		return err
	}
	var extra any
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return errors.New("trailing data after the JSON value")
	default:
		return errors.New("trailing data after the JSON value: " + err.Error())
	}
}
