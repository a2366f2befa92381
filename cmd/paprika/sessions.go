package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/paprika-hub/paprika/client"
)

const sessionsSynopsis = "paprika sessions [ls | new | rm ID...] [--hub URL] [--json]"

const sessionsNewSynopsis = "paprika sessions new [--label k=v ...] [--idle-timeout D] [--proxy URL] [--proxy-user U] [--proxy-pass P] " +
	"[--user-agent UA] [--viewport WxH] [--locale L] [--timezone TZ] [--cookies JSON|@FILE] [--block-type T ...] [--block-url P ...] [--profile NAME] " +
	"[--hub URL] [--json]"

// envProxyPass is where `sessions new` reads the proxy password when
// neither --proxy-pass nor the proxy URL gives one: a flag's value is
// visible to every user of the machine in the process list.
const envProxyPass = "PAPRIKA_PROXY_PASSWORD"

// sessionOpenTimeout bounds `sessions new`: the worker may have to start a
// browser for the lane (the agent allows itself a minute for that).
const sessionOpenTimeout = 2 * time.Minute

// sessions is `paprika sessions`: list, open or close interactive browser
// sessions.
func (c *cli) sessions(ctx context.Context, args []string) int {
	sub, args, code := c.subcommand(args, sessionsSynopsis, "Subcommands (default ls; each takes -h):\n"+
		"  ls   list the open sessions\n  new  open a session on a free chromium lane; prints its id and cdp_url\n"+
		"  rm   close sessions and free their lanes\n")
	if code >= 0 {
		return code
	}
	switch sub {
	case "ls", "list":
		return c.sessionsList(ctx, args)
	case "new", "create", "open":
		return c.sessionsNew(ctx, args)
	case "rm", "close", "delete":
		return c.sessionsRemove(ctx, args)
	default:
		return c.usageError("paprika sessions", fmt.Sprintf("unknown subcommand %q (ls, new, rm)", sub))
	}
}

func (c *cli) sessionsList(ctx context.Context, args []string) int {
	fs := newFlagSet("sessions ls")
	cf := c.addClientFlags(fs)
	limit := fs.Int("limit", 0, "at most `N` sessions (default: the hub's page size)")
	cursor := fs.String("cursor", "", "continue from this `cursor` (printed after a full page)")
	pos, code := c.parseOrExit(fs, "paprika sessions ls [--limit N] [--cursor C] [--hub URL] [--json]", args)
	if code >= 0 {
		return code
	}
	switch {
	case len(pos) > 0:
		return c.usageError(fs.Name(), fmt.Sprintf("unexpected argument %q", pos[0]))
	case *limit < 0:
		return c.usageError(fs.Name(), fmt.Sprintf("flag -limit: %d is negative", *limit))
	}
	cl, code := c.hubClient(fs, cf)
	if code >= 0 {
		return code
	}
	return show(ctx, c, cf, "sessions ls", func(ctx context.Context) (client.SessionPage, error) {
		return cl.ListSessions(ctx, client.SessionListOptions{Limit: *limit, Cursor: *cursor})
	}, func(page client.SessionPage) {
		renderSessions(c.stdout, page.Sessions, c.now())
		if page.NextCursor != "" {
			fmt.Fprintf(c.stderr, "more: paprika sessions ls --cursor %s\n", page.NextCursor)
		}
	})
}

func (c *cli) sessionsNew(ctx context.Context, args []string) int {
	fs := newFlagSet("sessions new")
	cf := c.addClientFlags(fs)
	labels := labelFlag{}
	fs.Var(labels, "label", "session label `KEY=VALUE`, repeatable")
	fs.Var(labels, "labels", "same as --label")
	idle := fs.String("idle-timeout", "", "close the session after this long without a command: a `duration` (90s, 10m) or seconds (default: the hub's, 300s)")
	proxy := fs.String("proxy", "", "proxy server `URL` for the page's traffic (http, https, socks4, socks5); user:pass@ in it authenticates")
	proxyUser := fs.String("proxy-user", "", "proxy `username` (instead of the URL's)")
	proxyPass := fs.String("proxy-pass", "", "proxy `password` (instead of the URL's; default $"+envProxyPass+")")
	userAgent := fs.String("user-agent", "", "User-Agent `string` of the page")
	viewport := fs.String("viewport", "", "page size `WxH` in CSS pixels, e.g. 1280x720")
	locale := fs.String("locale", "", "page `locale`, a BCP 47 tag such as en-US")
	timezone := fs.String("timezone", "", "page time `zone`, an IANA name such as Europe/Berlin")
	cookies := fs.String("cookies", "", "cookies to preload: a JSON list of {name, value, domain|url, ...}, or @FILE holding one")
	profile := fs.String("profile", "", "profile `name` whose cookies and localStorage the page starts from and its close saves")
	var blockTypes, blockURLs listFlag
	fs.Var(&blockTypes, "block-type", "fail requests of this CDP resource `type` (Image, Font, ...); repeatable or a comma list")
	fs.Var(&blockURLs, "block-url", "fail requests whose URL matches this `pattern` ('*' matches any run); repeatable")
	pos, code := c.parseOrExit(fs, sessionsNewSynopsis, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return c.usageError(fs.Name(), fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	opts := client.SessionOptions{BrowserOptions: client.BrowserOptions{
		UserAgent: *userAgent, Locale: strings.TrimSpace(*locale), Timezone: strings.TrimSpace(*timezone),
		Profile: strings.TrimSpace(*profile),
	}}
	if len(labels) > 0 {
		opts.Labels = labels
	}
	var err error
	if opts.IdleTimeoutS, err = idleSeconds(*idle); err != nil {
		return c.usageError(fs.Name(), "flag -idle-timeout: "+err.Error())
	}
	if opts.Proxy, err = proxyOption(*proxy, *proxyUser, *proxyPass, c.getenv(envProxyPass)); err != nil {
		return c.usageError(fs.Name(), "flag -proxy: "+err.Error())
	}
	if opts.Viewport, err = viewportOption(*viewport); err != nil {
		return c.usageError(fs.Name(), "flag -viewport: "+err.Error())
	}
	if opts.Cookies, err = cookiesOption(*cookies, os.ReadFile); err != nil {
		return c.usageError(fs.Name(), "flag -cookies: "+err.Error())
	}
	if len(blockTypes) > 0 || len(blockURLs) > 0 {
		opts.Block = &client.Block{ResourceTypes: blockTypes, URLPatterns: blockURLs}
	}
	cl, code := c.hubClient(fs, cf)
	if code >= 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, sessionOpenTimeout)
	defer cancel()
	s, err := cl.CreateSession(ctx, opts)
	if err != nil {
		return c.fail(ctx, "sessions new", err)
	}
	if cf.json {
		return c.printJSON("sessions new", s)
	}
	// One line, "ID CDP_URL", so that `read id url < <(paprika sessions
	// new)` takes both.
	line := s.ID
	if s.CDPURL != "" {
		line += " " + s.CDPURL
	}
	fmt.Fprintln(c.stdout, termSafe(line))
	return exitOK
}

// sessionsRemove is `sessions rm ID...`: it closes every session given,
// going on past failures, and fails if any close failed.
func (c *cli) sessionsRemove(ctx context.Context, args []string) int {
	return perID(ctx, c, "sessions rm", "paprika sessions rm ID... [--hub URL] [--json]", args,
		(*client.Client).CloseSession,
		func(s *client.Session) string { return fmt.Sprintf("session %s closed", s.ID) },
		func(closed []*client.Session) any { return map[string]any{"sessions": closed} })
}

// renderSessions writes sessions as a table, in the hub's order (by id).
func renderSessions(w io.Writer, ss []client.Session, now time.Time) {
	renderList(w, "open sessions", ss, []string{"ID", "WORKER", "LANE", "STATUS", "LAST USED", "AGE", "LABELS"}, func(s client.Session) []string {
		return []string{s.ID, s.WorkerID, s.Lane, s.Status, age(now, s.LastUsed), age(now, s.CreatedAt), joinPairs(s.Labels)}
	})
}

// idleSeconds reads --idle-timeout: a Go duration or a number of seconds;
// "" is 0 (the hub's default).
func idleSeconds(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 1 {
			return 0, fmt.Errorf("%q: want at least 1 second", v)
		}
		return n, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a duration (90s, 10m) nor a number of seconds", v)
	}
	if d < time.Second || d%time.Second != 0 {
		return 0, fmt.Errorf("%q: want whole seconds, at least 1", v)
	}
	return int(d / time.Second), nil
}

// proxyOption builds the proxy option from --proxy, whose user:pass@ part
// (if any) becomes the credentials and leaves the server address, and
// --proxy-user / --proxy-pass / $PAPRIKA_PROXY_PASSWORD, which override
// it in that order. The hub checks the server's scheme and form.
func proxyOption(raw, user, pass, envPass string) (*client.Proxy, error) {
	if strings.TrimSpace(raw) == "" {
		if user != "" || pass != "" {
			return nil, errors.New("--proxy-user and --proxy-pass need --proxy")
		}
		return nil, nil
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%q: want scheme://host:port", redactURL(raw))
	}
	p := &client.Proxy{}
	if u.User != nil {
		p.Username = u.User.Username()
		p.Password, _ = u.User.Password()
		u.User = nil
	}
	p.Server = u.String()
	if user != "" {
		p.Username = user
	}
	if pass != "" {
		p.Password = pass
	} else if p.Password == "" && envPass != "" {
		p.Password = envPass
	}
	if p.Password != "" && p.Username == "" {
		return nil, errors.New("a proxy password needs a username (user:pass@ in the URL or --proxy-user)")
	}
	return p, nil
}

// redactURL hides a password in a URL that is about to be printed.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	if at := strings.LastIndex(raw, "@"); at >= 0 {
		return "***" + raw[at:]
	}
	return raw
}

// viewportOption reads --viewport WxH; the hub checks the bounds.
func viewportOption(v string) (*client.Viewport, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	ws, hs, ok := strings.Cut(strings.ToLower(v), "x")
	w, errW := strconv.Atoi(ws)
	h, errH := strconv.Atoi(hs)
	if !ok || errW != nil || errH != nil || w < 1 || h < 1 {
		return nil, fmt.Errorf("%q: want WIDTHxHEIGHT, e.g. 1280x720", v)
	}
	return &client.Viewport{Width: w, Height: h}, nil
}

// cookiesOption reads --cookies: a JSON list, inline or from @FILE.
func cookiesOption(v string, readFile func(string) ([]byte, error)) ([]client.Cookie, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	raw := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		b, err := readFile(name)
		if pe, ok := errors.AsType[*iofs.PathError](err); ok {
			err = pe.Err // the path is in the message already
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		raw = b
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	var cs []client.Cookie
	if err := dec.Decode(&cs); err != nil {
		return nil, fmt.Errorf("want a JSON list of cookies [{\"name\":..,\"value\":..,\"domain\":..}]: %w", err)
	}
	return cs, nil
}
