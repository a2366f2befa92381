//go:build !race

// Several cluster members in one process trip an upstream data race in
// protoactor (remote.Start swaps gRPC's global logger; see
// membership/redis_multi_test.go), so these tests build without -race and run
// in the Makefile's second pass (-run '^TestMultiMember').

package hub

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/actors/grains"
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/persistence"
	"github.com/paprika-hub/paprika/persistence/storetest"
)

// sharedStoreConfigs returns the configs of two hubs of one deployment:
// one MariaDB database and one Redis key prefix (so one cluster, through
// the Redis membership provider), each hub with its own listen address and
// asset directory.
func sharedStoreConfigs(t *testing.T) (a, b *config.Config) {
	if testing.Short() {
		t.Skip("needs MariaDB and Redis; skipped with -short")
	}
	dsn := storetest.MySQLDatabase(t)
	url, prefix := storetest.RedisPrefix(t)
	mk := func() *config.Config {
		cfg := testConfig(t)
		for k, v := range map[string]string{"mysql.dsn": dsn, "redis.url": url, "redis.prefix": prefix} {
			require.NoError(t, cfg.Set(k, v), k)
		}
		return cfg
	}
	return mk(), mk()
}

// twoHubs starts two hubs of one deployment (sharedStoreConfigs) and
// waits until each counts the other a member.
func twoHubs(t *testing.T) (a, b *Hub) {
	cfgA, cfgB := sharedStoreConfigs(t)
	a = startTestHub(t, cfgA)
	b = startTestHub(t, cfgB)
	require.Eventually(t, func() bool {
		return a.member.Cluster.MemberList.Length() == 2 && b.member.Cluster.MemberList.Length() == 2
	}, 10*time.Second, 20*time.Millisecond, "the hubs meet")
	return a, b
}

// TestMultiMemberSessionSurvivesHubLoss: a session whose grain lives on hub
// A goes on through hub B after A leaves: B activates the grain from the
// session store, its commands drive the same browser tab, the worker still
// counts the lane, and DELETE through B frees it.
func TestMultiMemberSessionSurvivesHubLoss(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, formPage)
	}))
	defer page.Close()
	cfgA, cfgB := sharedStoreConfigs(t)
	a := startTestHub(t, cfgA)
	b := startTestHub(t, cfgB)
	require.Equal(t, "redis", b.stores.Kinds["sessions"])
	require.Eventually(t, func() bool {
		return a.member.Cluster.MemberList.Length() == 2 && b.member.Cluster.MemberList.Length() == 2
	}, 10*time.Second, 20*time.Millisecond, "the hubs meet")
	// The worker links to B: a socket on the hub that goes away would end
	// the session by design (the worker grain ends sessions on disconnect).
	startChromiumAgent(t, b.URL(), "wc", 1)
	ctx := context.Background()
	lanesInUse := func() int {
		ws, err := b.Workers(ctx)
		if err != nil || len(ws) != 1 || !ws[0].Alive {
			return -1
		}
		return ws[0].InFlight
	}
	require.Eventually(t, func() bool { return lanesInUse() == 0 }, 20*time.Second, 20*time.Millisecond)

	// Open sessions through A until one's grain lives on A (placement is
	// by a hash of the id, which the hub draws).
	var id string
	for attempt := 1; ; attempt++ {
		require.LessOrEqual(t, attempt, 12, "no session grain landed on hub A")
		id = openSession(t, a.URL())
		if pid := b.member.Cluster.Get(id, grains.KindSession); pid != nil && pid.Address == a.member.Address() {
			break
		}
		st, body := do(t, "DELETE", a.URL()+"/sessions/"+id, "")
		require.Equal(t, http.StatusOK, st, string(body))
		require.Eventually(t, func() bool { return lanesInUse() == 0 }, 10*time.Second, 20*time.Millisecond)
	}
	fillForm(t, a.URL(), id, page.URL)
	rec, err := b.stores.Sessions.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "wc", rec.WorkerID)
	require.Equal(t, grains.SessionOpen, rec.State)
	// The registry's slot counts are written at most every 250 ms
	// (registryFlushDelay): the open may not show there yet.
	require.Eventually(t, func() bool { return lanesInUse() == 1 }, 5*time.Second, 20*time.Millisecond,
		"the worker counts the session's lane")
	// B lists the session A opened: the list is the shared store's.
	st, body := do(t, "GET", b.URL()+"/sessions", "")
	require.Equal(t, http.StatusOK, st, string(body))
	require.Contains(t, string(body), `"id":"`+id+`"`)

	require.NoError(t, a.Stop(ctx))
	require.Eventually(t, func() bool { return b.member.Cluster.MemberList.Length() == 1 },
		10*time.Second, 20*time.Millisecond, "B sees A gone")

	st, body = do(t, "GET", b.URL()+"/sessions/"+id, "")
	require.Equal(t, http.StatusOK, st, string(body))
	require.Contains(t, string(body), `"status":"open"`)
	requireSameTab(t, b.URL(), id)
	require.GreaterOrEqual(t, b.Metrics().Get("paprika_sessions_resumed_total"), int64(1))
	require.Equal(t, 1, lanesInUse(), "the worker still counts the session's lane, once")

	st, body = do(t, "DELETE", b.URL()+"/sessions/"+id, "")
	require.Equal(t, http.StatusOK, st, string(body))
	require.Contains(t, string(body), `"closed"`)
	require.Eventually(t, func() bool { return lanesInUse() == 0 }, 10*time.Second, 20*time.Millisecond,
		"DELETE after the move frees the lane")
	_, err = b.stores.Sessions.Get(ctx, id)
	require.ErrorIs(t, err, persistence.ErrNotFound)
	st, body = do(t, "GET", b.URL()+"/sessions", "")
	require.Equal(t, http.StatusOK, st, string(body))
	require.NotContains(t, string(body), id, "a closed session is not listed")
	st, body = do(t, "POST", b.URL()+"/sessions/"+id+"/commands", `{"op":"text","selector":"#out"}`)
	require.Equal(t, http.StatusGone, st, string(body))

	// The worker freed the lane too: a new session gets it.
	next := openSession(t, b.URL())
	require.False(t, strings.EqualFold(next, id))
	st, body = do(t, "DELETE", b.URL()+"/sessions/"+next, "")
	require.Equal(t, http.StatusOK, st, string(body))
}

// TestMultiMemberCDPThroughAnotherHub: chromedp drives a session's lane
// through hub A while the worker is linked to hub B — the client end on A,
// the worker's tunnel socket on B, the session grain wherever it lives —
// through /sessions/{id}/cdp and the one-step /cdp alike.
func TestMultiMemberCDPThroughAnotherHub(t *testing.T) {
	page := serveCookiePage(t)
	a, b := twoHubs(t)
	startChromiumAgent(t, b.URL(), "wc", 1)
	ctx := context.Background()
	free := func() bool {
		ws, err := a.Workers(ctx)
		return err == nil && len(ws) == 1 && ws[0].Alive && ws[0].InFlight == 0
	}
	require.Eventually(t, free, 20*time.Second, 20*time.Millisecond)

	id, cdpURL := openCDPSession(t, a.URL())
	require.True(t, strings.HasPrefix(cdpURL, wsURL(a.URL())+"/"), "cdp_url points at the hub that answered: %s", cdpURL)
	driveWithChromedp(t, cdpURL, page.URL)
	st, body := do(t, "DELETE", a.URL()+"/sessions/"+id, "")
	require.Equal(t, http.StatusOK, st, string(body))
	require.Eventually(t, free, 10*time.Second, 20*time.Millisecond)

	driveWithChromedp(t, wsURL(a.URL())+"/cdp", page.URL)
	require.Eventually(t, free, 15*time.Second, 20*time.Millisecond, "/cdp's session closes with its client")
}
