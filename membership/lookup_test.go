//go:build !race

// Starts remoting in this process: see remoting_test.go for why -race is off.

package membership

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// staticProvider publishes the member list the test sets.
type staticProvider struct{ extra []*cluster.Member }

func (s *staticProvider) StartMember(c *cluster.Cluster) error {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return err
	}
	self := &cluster.Member{Id: c.ActorSystem.ID, Host: host, Port: int32(port), Kinds: c.GetClusterKinds()}
	c.MemberList.UpdateClusterTopology(append([]*cluster.Member{self}, s.extra...))
	return nil
}
func (s *staticProvider) StartClient(*cluster.Cluster) error { return nil }
func (s *staticProvider) Shutdown(bool) error                { return nil }

// TestMultiMemberLookupFollowsOwnerMove: a lookup waiting on an owner that
// never answers (a member whose host swallows connections) is answered by
// the new owner as soon as a topology update drops it, instead of waiting
// out the activation timeout and returning nothing; and the update itself
// is not held up by the pending lookup, nor are lookups of other grains.
func TestMultiMemberLookupFollowsOwnerMove(t *testing.T) {
	holeHost, holePort, err := net.SplitHostPort(silentAddr(t)) // accepts, never speaks
	require.NoError(t, err)
	port, _ := strconv.Atoi(holePort)
	ghost := &cluster.Member{Id: "ghost", Host: holeHost, Port: int32(port), Kinds: []string{"echo"}}

	kind := cluster.NewKind("echo", actor.PropsFromProducer(func() actor.Actor { return &echoGrain{} }))
	m, err := startWith(Options{Name: "t", Host: "127.0.0.1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Kinds: []*cluster.Kind{kind}, RequestTimeout: 2 * time.Second},
		func() cluster.ClusterProvider { return &staticProvider{extra: []*cluster.Member{ghost}} })
	require.NoError(t, err)
	t.Cleanup(func() { m.Stop(false) })
	host, selfPort, err := m.System.GetHostPort()
	require.NoError(t, err)
	self := &cluster.Member{Id: m.System.ID, Host: host, Port: int32(selfPort), Kinds: []string{"echo"}}

	// One identity the ghost owns, one this member owns.
	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers([]*cluster.Member{self, ghost})
	var onGhost, onSelf string
	for i := 0; onGhost == "" || onSelf == ""; i++ {
		id := fmt.Sprintf("id-%d", i)
		if rdv.GetByClusterIdentity(&cluster.ClusterIdentity{Identity: id, Kind: "echo"}) == ghost.Address() {
			onGhost = id
		} else {
			onSelf = id
		}
	}

	got := make(chan *actor.PID, 1)
	go func() { got <- m.Cluster.Get(onGhost, "echo") }()
	time.Sleep(300 * time.Millisecond) // the request is on its way to the ghost

	// The ghost is dropped; the update returns while the lookup is pending.
	updated := make(chan struct{})
	go func() {
		m.Cluster.MemberList.UpdateClusterTopology([]*cluster.Member{self})
		close(updated)
	}()
	select {
	case <-updated:
	case <-time.After(activationTimeout - time.Second):
		t.Fatal("the topology update waited for a lookup pending on the dropped member")
	}
	pid := <-got
	require.NotNil(t, pid, "the pending lookup was answered by the new owner, not timed out")
	require.Equal(t, m.Address(), pid.Address)
	require.NotNil(t, m.Cluster.Get(onSelf, "echo"))

	// A lookup pending on a ghost holds up nobody else. (protoactor never
	// re-admits a dropped member id; the same address under a new id owns
	// the same identities.)
	ghost2 := &cluster.Member{Id: "ghost-2", Host: ghost.Host, Port: ghost.Port, Kinds: ghost.Kinds}
	m.Cluster.MemberList.UpdateClusterTopology([]*cluster.Member{self, ghost2})
	pending := make(chan *actor.PID, 1)
	go func() { pending <- m.Cluster.Get(onGhost, "echo") }()
	time.Sleep(300 * time.Millisecond)
	require.NotNil(t, m.Cluster.Get(onSelf, "echo"), "another grain's lookup while one is pending on the ghost")
	select {
	case pid := <-pending:
		t.Fatalf("a lookup on a silent owner answered: %v", pid)
	default:
	}
	require.Nil(t, <-pending, "no owner answered: nothing, and the caller retries")
}

// TestMultiMemberActivationEndDropsCachedPID: when a grain's activation on
// another member ends, the PID this member cached for it goes (protoactor
// drops it only on the grain's own member): the next message looks it up
// instead of going to a stopped grain, and the cache does not keep every
// job ever run. A newer PID cached for the identity stays.
func TestMultiMemberActivationEndDropsCachedPID(t *testing.T) {
	m, _ := startEchoMember(t)

	// As the grain's member broadcasts it (Lookup): to every member's
	// event stream.
	ended := actor.NewPID("127.0.0.1:1", "partition-activator/a$1")
	m.Cluster.PidCache.Set("a", "echo", ended)
	newer := actor.NewPID("127.0.0.1:1", "partition-activator/b$2")
	m.Cluster.PidCache.Set("b", "echo", newer)
	// b's first, so it has been handled once a's is.
	m.Cluster.MemberList.BroadcastEvent(&cluster.ActivationTerminated{Pid: actor.NewPID("127.0.0.1:1", "partition-activator/b$1"),
		ClusterIdentity: &cluster.ClusterIdentity{Identity: "b", Kind: "echo"}}, true)
	m.Cluster.MemberList.BroadcastEvent(&cluster.ActivationTerminated{Pid: ended,
		ClusterIdentity: &cluster.ClusterIdentity{Identity: "a", Kind: "echo"}}, true)
	require.Eventually(t, func() bool { _, ok := m.Cluster.PidCache.Get("a", "echo"); return !ok },
		5*time.Second, 10*time.Millisecond, "the ended activation's PID is dropped")
	got, ok := m.Cluster.PidCache.Get("b", "echo")
	require.True(t, ok)
	require.True(t, got.Equal(newer), "an older activation's end leaves a newer PID")
}

// TestMultiMemberEndedActivationsAreToldInOneNotice: grains that end on
// one member are told to the others together (one cluster.PackedActivations
// per member per interval, not one message per grain): the other member
// drops the PIDs it cached for them, and keeps the one of a grain still up.
func TestMultiMemberEndedActivationsAreToldInOneNotice(t *testing.T) {
	a, selfA := startEchoMember(t)
	b, selfB := startEchoMember(t, selfA)
	a.Cluster.MemberList.UpdateClusterTopology([]*cluster.Member{selfA, selfB})

	// Identities that A owns, activated from B, their PIDs cached on B.
	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers([]*cluster.Member{selfA, selfB})
	var ids []string
	for i := 0; len(ids) < 21; i++ {
		id := fmt.Sprintf("g-%d", i)
		if rdv.GetByClusterIdentity(&cluster.ClusterIdentity{Identity: id, Kind: "echo"}) == selfA.Address() {
			ids = append(ids, id)
		}
	}
	pids := map[string]*actor.PID{}
	for _, id := range ids {
		pid := b.Cluster.Get(id, "echo")
		require.NotNil(t, pid, id)
		require.Equal(t, a.Address(), pid.Address)
		b.Cluster.PidCache.Set(id, "echo", pid)
		pids[id] = pid
	}
	var notices, told atomic.Int64
	sub := b.System.EventStream.Subscribe(func(evt interface{}) {
		if p, ok := evt.(*cluster.PackedActivations); ok && p.Address == a.Address() {
			notices.Add(1)
			for _, k := range p.Actors {
				told.Add(int64(len(k.Activations)))
			}
		}
	})
	t.Cleanup(func() { b.System.EventStream.Unsubscribe(sub) })

	keep, end := ids[0], ids[1:]
	for _, id := range end {
		a.System.Root.Poison(pids[id])
	}
	require.Eventually(t, func() bool {
		for _, id := range end {
			if _, ok := b.Cluster.PidCache.Get(id, "echo"); ok {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "B drops the PIDs of the grains that ended on A")
	got, ok := b.Cluster.PidCache.Get(keep, "echo")
	require.True(t, ok, "the PID of a grain still up stays")
	require.True(t, got.Equal(pids[keep]))
	require.EqualValues(t, len(end), told.Load(), "each end is told once")
	require.Less(t, notices.Load(), int64(len(end)), "ends are told together, not one message each")
	require.EqualValues(t, 1, a.Cluster.GetClusterKind("echo").Count())
}

// startEchoMember starts a member with the echo kind whose provider
// lists it and extra, and returns it with its own member entry.
func startEchoMember(tb testing.TB, extra ...*cluster.Member) (*Member, *cluster.Member) {
	tb.Helper()
	kind := cluster.NewKind("echo", actor.PropsFromProducer(func() actor.Actor { return &echoGrain{} }))
	return startKindsMember(tb, []*cluster.Kind{kind}, extra...)
}

// startKindsMember starts a member hosting kinds, as startEchoMember does.
func startKindsMember(tb testing.TB, kinds []*cluster.Kind, extra ...*cluster.Member) (*Member, *cluster.Member) {
	tb.Helper()
	m, err := startWith(Options{Name: "t", Host: "127.0.0.1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Kinds: kinds, RequestTimeout: 2 * time.Second},
		func() cluster.ClusterProvider { return &staticProvider{extra: extra} })
	require.NoError(tb, err)
	tb.Cleanup(func() { m.Stop(false) })
	host, port, err := m.System.GetHostPort()
	require.NoError(tb, err)
	return m, &cluster.Member{Id: m.System.ID, Host: host, Port: int32(port), Kinds: []string{"echo"}}
}

// BenchmarkMultiMemberActivationEnd: one grain activated and stopped per
// op while live other activations stay up (a hub keeps a job's grain up
// 3 s after the job ends, FinalPassivate, and an unfinished one for as
// long as it runs: at 1,000 jobs/s that is thousands of them). What the
// placement actor does per ended activation — find it, and tell the
// members their cached PID is gone — is paid once per job.
func BenchmarkMultiMemberActivationEnd(b *testing.B) {
	for _, live := range []int{0, 20000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			m, _ := startEchoMember(b)
			for i := range live {
				require.NotNil(b, m.Cluster.Get("live-"+strconv.Itoa(i), "echo"))
			}
			count := func() int { return int(m.Cluster.GetClusterKind("echo").Count()) }
			b.ResetTimer()
			for i := range b.N {
				pid := m.Cluster.Get("op-"+strconv.Itoa(i), "echo")
				m.System.Root.Poison(pid)
			}
			for count() > live {
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// ensured is what an ensureGrain heard: its identity, the member it runs
// on, and the record the JobEnsure carried.
type ensured struct{ identity, address, record string }

// ensureGrain reports every JobEnsure it is handed.
type ensureGrain struct {
	id  string
	got chan<- ensured
}

func (g *ensureGrain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *cluster.ClusterInit:
		g.id = m.Identity.Identity
	case *messages.JobEnsure:
		g.got <- ensured{g.id, ctx.ActorSystem().Address(), m.GetCreated().GetId()}
	}
}

// TestMultiMemberDeliverActivatesOnOwner: Lookup.Deliver hands a grain its
// message through the placement actor of the identity's owner, in one
// message: the grain is activated there (once: a second delivery finds
// it), with the payload intact across members; an owner that does not list
// DeliverKind (an older hub) is not sent one, and the caller falls back.
// Likewise AnswersCalls: a member listing CallKind answers calls by their
// id; an older one is asked through a future.
func TestMultiMemberDeliverActivatesOnOwner(t *testing.T) {
	got := make(chan ensured, 8)
	kinds := func() []*cluster.Kind {
		return []*cluster.Kind{cluster.NewKind("ens", actor.PropsFromProducer(func() actor.Actor { return &ensureGrain{got: got} }))}
	}
	a, selfA := startKindsMember(t, kinds())
	selfA.Kinds = []string{"ens", DeliverKind, CallKind}
	b, selfB := startKindsMember(t, kinds(), selfA)
	selfB.Kinds = []string{"ens", DeliverKind}
	both := []*cluster.Member{selfA, selfB}
	a.Cluster.MemberList.UpdateClusterTopology(both)
	b.Cluster.MemberList.UpdateClusterTopology(both)

	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers(both)
	var onA, onB string
	for i := 0; onA == "" || onB == ""; i++ {
		id := fmt.Sprintf("j-%d", i)
		if rdv.GetByClusterIdentity(cluster.NewClusterIdentity(id, "ens")) == selfA.Address() {
			onA = id
		} else {
			onB = id
		}
	}
	lookup := b.Cluster.Config.IdentityLookup.(*Lookup)
	require.Equal(t, a.Address(), lookup.OwnerOf(onA, "ens"), "OwnerOf agrees with the hash")
	require.Equal(t, b.Address(), lookup.OwnerOf(onB, "ens"))
	require.Empty(t, lookup.OwnerOf(onA, "no-such-kind"), "no member has the kind")
	require.True(t, lookup.AnswersCalls(a.Address()), "A lists CallKind")
	require.True(t, lookup.AnswersCalls(b.Address()), "this member answers calls")
	require.False(t, lookup.AnswersCalls("127.0.0.1:1"), "no member there")
	deliver := func(id string) string {
		owner, ok := lookup.Deliver(cluster.NewClusterIdentity(id, "ens"), &messages.GrainDeliver{Identity: id, Kind: "ens",
			Payload: &messages.GrainDeliver_JobEnsure{JobEnsure: &messages.JobEnsure{Created: &messages.JobRecord{Id: id}}}})
		require.True(t, ok, id)
		return owner
	}
	wait := func() ensured {
		select {
		case e := <-got:
			return e
		case <-time.After(5 * time.Second):
			t.Fatal("the grain was not handed its message")
			return ensured{}
		}
	}

	require.Equal(t, a.Address(), deliver(onA))
	require.Equal(t, ensured{onA, a.Address(), onA}, wait(), "activated on its owner, the other member, payload intact")
	require.Equal(t, b.Address(), deliver(onB))
	require.Equal(t, ensured{onB, b.Address(), onB}, wait(), "an identity this member owns: here")
	deliver(onA)
	require.Equal(t, ensured{onA, a.Address(), onA}, wait())
	require.EqualValues(t, 1, a.Cluster.GetClusterKind("ens").Count(), "the second delivery found the activation")

	// A's entry as an older binary lists it (under a new id: protoactor
	// announces a topology only when its member ids change).
	older := &cluster.Member{Id: selfA.Id + "-older", Host: selfA.Host, Port: selfA.Port, Kinds: []string{"ens"}}
	b.Cluster.MemberList.UpdateClusterTopology([]*cluster.Member{older, selfB})
	require.Eventually(t, func() bool {
		_, ok := lookup.Deliver(cluster.NewClusterIdentity(onA, "ens"), &messages.GrainDeliver{Identity: onA, Kind: "ens"})
		return !ok
	}, 5*time.Second, 10*time.Millisecond, "an owner without DeliverKind is not sent one")
	require.False(t, lookup.AnswersCalls(a.Address()), "nor is a member without CallKind sent calls")
	require.True(t, lookup.AnswersCalls(b.Address()))
}
