//go:build !race

// A second protoactor remote in the process trips the upstream data race
// of remote.Start (it swaps gRPC's global logger; see
// membership/redis_multi_test.go), so this test builds without -race and
// runs in the Makefile's second pass (-run '^TestSecurityCluster').

package hub

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// A WorkerConn takes assignments from members of its cluster only: a hub
// the cluster dropped (frozen past the member timeout) sends what its
// actors had queued when it resumes, maybe an attempt that has run since.
// Here the stranger is a plain remote that never joined; its assignment is
// refused as not_member, the worker hears nothing of it, and the member's
// own assignments still flow on the same link.
func TestSecurityClusterLinkRefusesNonMembers(t *testing.T) {
	h := startTestHub(t, testConfig(t))
	l := dialRawLink(t, h.URL(), "w-fence", 1)
	var link string
	require.Eventually(t, func() bool {
		rec, err := h.stores.Workers.Get(context.Background(), "w-fence")
		link = rec.Link
		return err == nil && link != ""
	}, 5*time.Second, 20*time.Millisecond)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	t.Cleanup(func() { r.Shutdown(false) })
	addr, id, _ := strings.Cut(link, "/")
	frame, err := json.Marshal(messages.Frame{Type: messages.TypeAssignJob, JobID: "phantom", Attempt: 1, Mode: messages.ModeNoop,
		Params: []byte(`{"lines":1}`)})
	require.NoError(t, err)
	res, err := system.Root.RequestFuture(actor.NewPID(addr, id),
		&messages.ConnSend{Frame: frame, Ack: true, JobId: "phantom", Attempt: 1}, 5*time.Second).Result()
	require.NoError(t, err)
	rep, ok := res.(*messages.Reply)
	require.True(t, ok, "%T", res)
	require.False(t, rep.Ok)
	require.Equal(t, string(messages.CodeNotMember), rep.Code, rep.Message)

	j := submit(t, h.URL(), `{"mode":"noop"}`)
	f := l.next(5 * time.Second)
	require.Equal(t, messages.TypeAssignJob, f.Type, "the member's assignment comes, and nothing before it")
	require.Equal(t, j.ID, f.JobID)
}
