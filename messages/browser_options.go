package messages

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // timezone checks must not depend on the host's zoneinfo
)

// BrowserOptions are the options of a browser page: top-level fields of
// POST /sessions and of the params of fetch and macro jobs (API.md's
// additions, "Browser options"). The hub checks them (Validate) before it
// accepts a job or a session, and the worker's chromium driver applies them;
// both read this one declaration.
type BrowserOptions struct {
	// Proxy sends the page's traffic through a proxy server.
	Proxy *ProxyOptions `json:"proxy,omitempty"`
	// UserAgent replaces the browser's User-Agent (header and
	// navigator.userAgent).
	UserAgent string `json:"user_agent,omitempty"`
	// Viewport is the page's size in CSS pixels (and the screenshots').
	Viewport *Viewport `json:"viewport,omitempty"`
	// Locale is a BCP 47 tag (en-US, de-DE): navigator.language, Intl's
	// default and the Accept-Language header.
	Locale string `json:"locale,omitempty"`
	// Timezone is an IANA time zone name (Europe/Berlin).
	Timezone string `json:"timezone,omitempty"`
	// Cookies are set before the first navigation.
	Cookies []Cookie `json:"cookies,omitempty"`
	// Block fails requests by resource type or URL pattern.
	Block *BlockOptions `json:"block,omitempty"`
	// Record stores the page's screencast as recording.ndjson (a job's
	// asset, a session's download; agent/chromium/screencast.go).
	Record bool `json:"record,omitempty"`
	// Profile names the stored browser state a fetch or macro job starts
	// from and saves when it succeeds (profile.go). Sessions refuse it.
	Profile string `json:"profile,omitempty"`
}

// ProxyOptions is the proxy of a page. The password is a secret: the hub
// stores it sealed (PasswordSealed, under auth.params_key), answers it as
// "***", and opens it only into the frame that assigns the job to its
// worker; the worker hands it to Chromium's Fetch.authRequired and never
// logs it.
type ProxyOptions struct {
	// Server is scheme://host:port with scheme http, https, socks4 or socks5.
	Server string `json:"server"`
	// Username and Password answer the proxy's 407 challenge (HTTP and
	// HTTPS proxies only: Chromium does not authenticate to SOCKS proxies).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// PasswordSealed is Password as the hub stores it. Clients never send
	// it; workers never see it.
	PasswordSealed string `json:"password_sealed,omitempty"`
}

// Viewport is a page size in CSS pixels.
type Viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Cookie is one cookie to preload. It names its site by Domain or URL
// (at least one); Expires is in Unix seconds, 0 for a session cookie.
type Cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain,omitempty"`
	URL      string  `json:"url,omitempty"`
	Path     string  `json:"path,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	HTTPOnly bool    `json:"http_only,omitempty"`
	SameSite string  `json:"same_site,omitempty"`
	Expires  float64 `json:"expires,omitempty"`
}

// BlockOptions fails matching requests of the page (net::ERR_BLOCKED_BY_CLIENT).
type BlockOptions struct {
	// ResourceTypes are CDP Network.ResourceType values (Image, Font, ...).
	ResourceTypes []string `json:"resource_types,omitempty"`
	// URLPatterns match a request's whole URL; '*' matches any run of
	// characters (as CDP's Network.setBlockedURLs).
	URLPatterns []string `json:"url_patterns,omitempty"`
}

// Bounds of the browser options: enough for any real page, small enough
// that one job's options cannot weigh on a worker.
const (
	MinViewport        = 100
	MaxViewport        = 8192
	MaxUserAgentBytes  = 512
	MaxProxyServer     = 2048
	MaxProxyCredential = 256
	MaxCookies         = 100
	MaxCookieName      = 256
	MaxCookieValue     = 4096
	MaxCookieURL       = 2048
	MaxBlockPatterns   = 100
	MaxBlockPattern    = 1024
)

// ResourceTypes lists CDP's Network.ResourceType values, the words
// block.resource_types accepts.
var ResourceTypes = []string{"Document", "Stylesheet", "Image", "Media", "Font", "Script", "TextTrack",
	"XHR", "Fetch", "Prefetch", "EventSource", "WebSocket", "Manifest", "SignedExchange", "Ping",
	"CSPViolationReport", "Preflight", "FedCM", "Other"}

// SameSiteValues lists the values cookies[].same_site accepts.
var SameSiteValues = []string{"Strict", "Lax", "None"}

// ProxySchemes lists the schemes proxy.server accepts.
var ProxySchemes = []string{"http", "https", "socks4", "socks5"}

// OptionError is an invalid browser option: Field is its path
// ("viewport.width", "cookies[2].name"), the message says why.
type OptionError struct {
	Field string
	Msg   string
}

func (e *OptionError) Error() string { return e.Field + ": " + e.Msg }

// localePattern is the shape of a BCP 47 tag: a 2–3 letter language (or
// a 4–8 letter registered one), then subtags of 1–8 letters or digits.
var localePattern = regexp.MustCompile(`^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$`)

// Empty reports whether no option is set.
func (o BrowserOptions) Empty() bool {
	return o.Proxy == nil && o.UserAgent == "" && o.Viewport == nil && o.Locale == "" && o.Timezone == "" &&
		len(o.Cookies) == 0 && o.Block == nil && !o.Record
}

// Validate checks every option; the first fault comes back as an
// *OptionError naming its field.
func (o BrowserOptions) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &OptionError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if p := o.Proxy; p != nil {
		if err := p.validate(bad); err != nil {
			return err
		}
	}
	if o.UserAgent != "" {
		if len(o.UserAgent) > MaxUserAgentBytes {
			return bad("user_agent", "%d bytes, at most %d", len(o.UserAgent), MaxUserAgentBytes)
		}
		if !printableASCII(o.UserAgent) {
			return bad("user_agent", "only printable ASCII characters may be used")
		}
	}
	if v := o.Viewport; v != nil {
		for _, d := range []struct {
			field string
			n     int
		}{{"viewport.width", v.Width}, {"viewport.height", v.Height}} {
			if d.n < MinViewport || d.n > MaxViewport {
				return bad(d.field, "%d is out of range %d..%d", d.n, MinViewport, MaxViewport)
			}
		}
	}
	if o.Profile != "" {
		if err := CheckProfileName(o.Profile); err != nil {
			return bad("profile", "%v", err)
		}
	}
	if o.Locale != "" && (len(o.Locale) > 35 || !localePattern.MatchString(o.Locale)) {
		return bad("locale", "%q is not a BCP 47 language tag (like en-US)", o.Locale)
	}
	if o.Timezone != "" {
		if err := checkTimezone(o.Timezone); err != nil {
			return bad("timezone", "%v", err)
		}
	}
	if len(o.Cookies) > MaxCookies {
		return bad("cookies", "%d cookies, at most %d", len(o.Cookies), MaxCookies)
	}
	for i, c := range o.Cookies {
		if err := c.validate(fmt.Sprintf("cookies[%d]", i), bad); err != nil {
			return err
		}
	}
	if b := o.Block; b != nil {
		for i, rt := range b.ResourceTypes {
			if !slices.Contains(ResourceTypes, rt) {
				return bad(fmt.Sprintf("block.resource_types[%d]", i), "%q is not one of %s", cut(rt, 64), strings.Join(ResourceTypes, ", "))
			}
		}
		if len(b.ResourceTypes) > len(ResourceTypes) {
			return bad("block.resource_types", "%d types, at most %d", len(b.ResourceTypes), len(ResourceTypes))
		}
		if len(b.URLPatterns) > MaxBlockPatterns {
			return bad("block.url_patterns", "%d patterns, at most %d", len(b.URLPatterns), MaxBlockPatterns)
		}
		for i, p := range b.URLPatterns {
			field := fmt.Sprintf("block.url_patterns[%d]", i)
			switch {
			case p == "":
				return bad(field, "empty")
			case len(p) > MaxBlockPattern:
				return bad(field, "%d bytes, at most %d", len(p), MaxBlockPattern)
			case !printableASCII(p):
				return bad(field, "only printable ASCII characters may be used")
			}
		}
	}
	return nil
}

func (p *ProxyOptions) validate(bad func(string, string, ...any) error) error {
	if p.Server == "" {
		return bad("proxy.server", "required (scheme://host:port)")
	}
	if len(p.Server) > MaxProxyServer {
		return bad("proxy.server", "%d bytes, at most %d", len(p.Server), MaxProxyServer)
	}
	// Never echo what may be credentials written into the URL.
	shown := p.Server
	if i := strings.LastIndex(shown, "@"); i >= 0 {
		shown = "…" + shown[i:]
	}
	u, err := url.Parse(p.Server)
	if err == nil && u.User != nil {
		return bad("proxy.server", "credentials go in proxy.username and proxy.password, not in the URL")
	}
	if err != nil || !slices.Contains(ProxySchemes, u.Scheme) || u.Host == "" || u.Port() == "" {
		return bad("proxy.server", "%q must be scheme://host:port with scheme %s", cut(shown, 128), strings.Join(ProxySchemes, ", "))
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return bad("proxy.server", "must be scheme://host:port only: no path, query or fragment")
	}
	if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
		return bad("proxy.server", "port %q is out of range 1..65535", u.Port())
	}
	if h := u.Hostname(); net.ParseIP(h) == nil && !hostPattern.MatchString(h) {
		return bad("proxy.server", "host %q is not a host name or an IP address", cut(h, 128))
	}
	if p.PasswordSealed != "" {
		return bad("proxy.password_sealed", "is the hub's own field; send proxy.password")
	}
	for _, c := range []struct{ field, v string }{{"proxy.username", p.Username}, {"proxy.password", p.Password}} {
		if len(c.v) > MaxProxyCredential {
			return bad(c.field, "%d bytes, at most %d", len(c.v), MaxProxyCredential)
		}
		if strings.ContainsFunc(c.v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return bad(c.field, "control characters may not be used")
		}
	}
	if p.Password != "" && p.Username == "" {
		return bad("proxy.username", "required with proxy.password")
	}
	if p.Username != "" && strings.HasPrefix(u.Scheme, "socks") {
		return bad("proxy.username", "Chromium does not authenticate to SOCKS proxies; use an http or https proxy")
	}
	return nil
}

// hostPattern is a DNS name's shape: labels of letters, digits and
// hyphens (and underscores, which private DNS uses).
var hostPattern = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,62}))*\.?$`)

func (c Cookie) validate(at string, bad func(string, string, ...any) error) error {
	switch {
	case c.Name == "":
		return bad(at+".name", "required")
	case len(c.Name) > MaxCookieName:
		return bad(at+".name", "%d bytes, at most %d", len(c.Name), MaxCookieName)
	case !printableASCII(c.Name) || strings.ContainsAny(c.Name, " =;,\""):
		return bad(at+".name", "%q is not a cookie name", cut(c.Name, 64))
	case len(c.Value) > MaxCookieValue:
		return bad(at+".value", "%d bytes, at most %d", len(c.Value), MaxCookieValue)
	case strings.ContainsAny(c.Value, ";") || !printableASCII(c.Value) && c.Value != "":
		return bad(at+".value", "may hold printable ASCII characters except ';'")
	case c.Domain == "" && c.URL == "":
		return bad(at+".domain", "a cookie needs a domain or a url")
	}
	if c.Domain != "" && (len(c.Domain) > 253 || !hostPattern.MatchString(strings.TrimPrefix(c.Domain, "."))) {
		return bad(at+".domain", "%q is not a host name", cut(c.Domain, 64))
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if len(c.URL) > MaxCookieURL || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad(at+".url", "%q must be an absolute http(s) URL", cut(c.URL, 128))
		}
	}
	if c.Path != "" && (!strings.HasPrefix(c.Path, "/") || len(c.Path) > MaxCookieURL || !printableASCII(c.Path) || strings.Contains(c.Path, ";")) {
		return bad(at+".path", "%q must start with / (printable ASCII, no ';')", cut(c.Path, 64))
	}
	if c.SameSite != "" && !slices.Contains(SameSiteValues, c.SameSite) {
		return bad(at+".same_site", "%q is not one of %s", cut(c.SameSite, 32), strings.Join(SameSiteValues, ", "))
	}
	if c.SameSite == "None" && !c.Secure {
		return bad(at+".same_site", "None needs secure: true (browsers drop the cookie otherwise)")
	}
	if c.Expires < 0 || c.Expires > 1e11 {
		return bad(at+".expires", "%v is not a Unix time in seconds (0 = a session cookie)", c.Expires)
	}
	return nil
}

// checkTimezone accepts IANA zone names only: not "Local" (whatever the
// machine says) and not the empty name, which LoadLocation takes as UTC.
func checkTimezone(tz string) error {
	if len(tz) > 64 || tz == "Local" || !printableASCII(tz) {
		return fmt.Errorf("%q is not an IANA time zone name (like Europe/Berlin)", cut(tz, 64))
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fmt.Errorf("%q is not an IANA time zone name (like Europe/Berlin)", tz)
	}
	return nil
}

// printableASCII reports whether s holds only characters 0x20..0x7e.
func printableASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e })
}

// cut shortens s for an error message (a client's megabyte of junk must
// not come back in full).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Redacted returns o with the proxy password (clear or sealed) replaced by
// "***": the form every answer and log line shows.
func (o BrowserOptions) Redacted() BrowserOptions {
	if o.Proxy != nil && (o.Proxy.Password != "" || o.Proxy.PasswordSealed != "") {
		p := *o.Proxy
		p.Password, p.PasswordSealed = RedactedPassword, ""
		o.Proxy = &p
	}
	return o
}

// RedactedPassword stands for a proxy password in API answers.
const RedactedPassword = "***"
