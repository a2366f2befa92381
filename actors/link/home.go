package link

import (
	"log/slog"
	"net/url"
	"strings"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/internal/deadline"
	"github.com/paprika-hub/paprika/messages"
)

// homeURL returns the entry of hello's hub_urls that names the hub whose
// member owns this worker's grain, when that is another hub: the link is
// then told to relink there (messages.TypeRelink). With the socket on its
// grain's hub, the grain's assignments to the link and the link's reports
// to the grain are local messages, and a freed lane takes that hub's jobs
// first (jobQueue.nearer), whose grains are local too. "" — accept the
// link here — when hello lists no URLs (an older worker, or one that has
// just followed a relink), the cluster has one member, the owner is this
// hub, the hub registry does not answer within its timeout or lists no
// live hub for the owner, or the worker was not given the owner's URL
// (a worker behind one balancer address stays where it lands). It never
// dials what the worker sent: it compares.
func (c *workerConn) homeURL(hello messages.Frame) string {
	if len(hello.HubURLs) == 0 || c.deps.Hubs == nil {
		return ""
	}
	cl := c.deps.Cluster()
	if cl == nil {
		return ""
	}
	member := grains.OwnerOf(cl, c.workerID, grains.KindWorker)
	if member == "" || member == cl.ActorSystem.Address() {
		return ""
	}
	hubs, err := c.deps.Hubs.List(deadline.Within(c.deps.Timing.GrainTimeout))
	if err != nil {
		c.log.Debug("hub registry unreadable; the link stays here", slog.Any("err", err))
		return ""
	}
	for _, h := range hubs {
		if !h.Alive || h.Member != member {
			continue
		}
		for _, u := range hello.HubURLs {
			if sameHub(u, h.Address) {
				return u
			}
		}
	}
	return ""
}

// sameHub reports whether a worker's hub URL (http, https, ws or wss, as
// given to --hub) and a hub's advertised address name the same listener:
// the same host, case aside, the same port (the scheme's default when
// none is given), plain or TLS alike, and the same path, a trailing slash
// aside. An address without a scheme is taken as http.
func sameHub(workerURL, address string) bool {
	a, okA := hubKey(workerURL)
	b, okB := hubKey(address)
	return okA && okB && a == b
}

// hubKey is u reduced to what sameHub compares.
func hubKey(u string) (string, bool) {
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "", false
	}
	secure := false
	switch strings.ToLower(p.Scheme) {
	case "http", "ws":
	case "https", "wss":
		secure = true
	default:
		return "", false
	}
	port := p.Port()
	if port == "" {
		port = "80"
		if secure {
			port = "443"
		}
	}
	scheme := "plain"
	if secure {
		scheme = "tls"
	}
	return scheme + "://" + strings.ToLower(p.Hostname()) + ":" + port + strings.TrimSuffix(p.EscapedPath(), "/"), true
}
