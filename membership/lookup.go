package membership

import (
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/paprika-hub/paprika/messages"
)

// activatorName is the placement actor's name on every member; it is the
// one protoactor's disthash uses, so both speak the same protocol.
const activatorName = "partition-activator"

// activationTimeout bounds one activation request to one owner.
const activationTimeout = 5 * time.Second

// maxOwnerMoves bounds how often one lookup follows an identity to a new
// owner before giving up (the caller retries).
const maxOwnerMoves = 3

// Lookup places grains by rendezvous hashing over the member list, like
// protoactor's disthash, whose wire protocol (ActivationRequest to the
// owner's partition-activator) it keeps. It fixes two things that made a
// dead hub stall the survivors for the whole activation timeout:
//
//   - disthash holds its topology lock for reading across the activation
//     request, and a pending topology update (a writer) stops every new
//     lookup behind requests to the dead member — the whole cluster waited
//     5 s after the dead member had already been dropped. Here the lock
//     covers only the hash.
//   - a lookup waiting on an owner that a topology update has just
//     replaced asks the new owner at once instead of waiting out its
//     timeout.
type Lookup struct {
	cluster   *cluster.Cluster
	sub       *eventstream.Subscription
	placement *actor.PID

	mu      sync.RWMutex
	rdv     *cluster.Rendezvous
	changed chan struct{} // closed (and replaced) on every topology update
	// delivers are the members that take a GrainDeliver (they list
	// DeliverKind); a member of an older version is sent the lookup and
	// the message as before.
	delivers map[string]bool
	// answers are the members that answer a call by its id (they list
	// CallKind); a request to an older one goes through a future.
	answers map[string]bool
	// dispatcher runs the placement actor (Options.Dispatcher).
	dispatcher actor.Dispatcher
	// handOver are the kinds told Moved before a topology change stops
	// them (Options.HandOverKinds).
	handOver map[string]bool
}

// Moved is what an activation of a kind in Options.HandOverKinds reads
// when a topology change gave its identity to another member, just before
// the PoisonPill that stops it: a grain that holds what only it knows (the
// scheduler's queue) hands it over then. Owner is the new owner's address.
type Moved struct{ Owner string }

// DeliverKind is the cluster kind a member lists to say that its placement
// actor takes messages.GrainDeliver. No grain of it is ever activated.
const DeliverKind = "grain-deliver"

// CallKind is the cluster kind a member lists to say that its actors
// answer a request carrying a call id (messages.Called) with a Reply that
// carries it back, to the caller itself (supervise.Timers.Call). No grain
// of it is ever activated.
const CallKind = "grain-calls"

// markerKinds are the kinds a member lists to say what it takes, never
// activated (placementActor.activate refuses them).
var markerKinds = []string{DeliverKind, CallKind}

// markers are the marker kinds every member registers. A kind needs
// props; these are never spawned (placementActor.activate refuses them),
// so a lookup of one finds nothing.
func markers() []*cluster.Kind {
	kinds := make([]*cluster.Kind, 0, len(markerKinds))
	for _, name := range markerKinds {
		kinds = append(kinds, cluster.NewKind(name, actor.PropsFromFunc(func(actor.Context) {})))
	}
	return kinds
}

// NewLookup returns the identity lookup every member of a Paprika cluster
// uses.
func NewLookup() *Lookup { return &Lookup{} }

var _ cluster.IdentityLookup = (*Lookup)(nil)

// Setup starts the placement actor and follows topology updates.
func (l *Lookup) Setup(c *cluster.Cluster, _ []string, _ bool) {
	l.cluster = c
	l.mu.Lock()
	l.rdv = cluster.NewRendezvous()
	l.changed = make(chan struct{})
	l.mu.Unlock()
	system := c.ActorSystem
	l.placement, _ = system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &placementActor{cluster: c, handOver: l.handOver, actors: map[string]placed{}, byPID: map[string]string{}}
	}, actor.WithDispatcher(l.dispatcher)), activatorName)
	l.sub = system.EventStream.Subscribe(func(ev interface{}) {
		if t, ok := ev.(*cluster.ClusterTopology); ok {
			l.onTopology(t)
		}
	})
}

// Shutdown stops following the topology and stops every local grain.
func (l *Lookup) Shutdown() {
	system := l.cluster.ActorSystem
	system.EventStream.Unsubscribe(l.sub)
	if err := system.Root.PoisonFuture(l.placement).Wait(); err != nil {
		l.cluster.Logger().Error("stop placement actor", slog.Any("err", err))
	}
}

func (l *Lookup) onTopology(t *cluster.ClusterTopology) {
	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers(t.Members)
	delivers, answers := map[string]bool{}, map[string]bool{}
	for _, m := range t.Members {
		if slices.Contains(m.Kinds, DeliverKind) {
			delivers[m.Address()] = true
		}
		if slices.Contains(m.Kinds, CallKind) {
			answers[m.Address()] = true
		}
	}
	l.mu.Lock()
	l.rdv = rdv
	l.delivers = delivers
	l.answers = answers
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	l.cluster.ActorSystem.Root.Send(l.placement, t)
}

// owner is the address that places identity under the current topology,
// and the channel closed when that topology is replaced.
func (l *Lookup) owner(id *cluster.ClusterIdentity) (string, <-chan struct{}) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.rdv.GetByClusterIdentity(id), l.changed
}

// OwnerOf is the address of the member that places identity of kind
// under this member's current view of the topology; "" when there is none.
func (l *Lookup) OwnerOf(identity, kind string) string {
	id := cluster.ClusterIdentity{Identity: identity, Kind: kind}
	owner, _ := l.owner(&id)
	return owner
}

// Deliver sends msg, one way, to the placement actor of the member that
// owns id, which activates the grain there if it is not up and hands it
// the payload: one message instead of an activation request, its answer,
// and then the message. It returns that member's address; false when there
// is no owner or the owner is of a version that does not take it (the
// caller looks the grain up and sends, as before). Like any one-way send to
// a grain, a message to an owner that dies meanwhile is lost; what sends it
// has its own repair (a job's wake: the re-drive).
func (l *Lookup) Deliver(id *cluster.ClusterIdentity, msg *messages.GrainDeliver) (string, bool) {
	l.mu.RLock()
	owner := l.rdv.GetByClusterIdentity(id)
	takes := l.delivers[owner]
	l.mu.RUnlock()
	if owner == "" || !takes {
		return "", false
	}
	l.cluster.ActorSystem.Root.Send(actor.NewPID(owner, activatorName), msg)
	return owner, true
}

// AnswersCalls reports whether the member at address answers a call by
// its id (CallKind): this member always does.
func (l *Lookup) AnswersCalls(address string) bool {
	if address == l.cluster.ActorSystem.Address() {
		return true
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.answers[address]
}

type activation struct {
	res interface{}
	err error
}

// Get asks the identity's owner for its activation; nil when there is no
// owner, the owner failed it, or no answer came (the caller retries).
func (l *Lookup) Get(id *cluster.ClusterIdentity) *actor.PID {
	root := l.cluster.ActorSystem.Root
	for moves := 0; moves < maxOwnerMoves; moves++ {
		owner, changed := l.owner(id)
		if owner == "" {
			return nil
		}
		fut := root.RequestFuture(actor.NewPID(owner, activatorName),
			&cluster.ActivationRequest{ClusterIdentity: id}, activationTimeout)
		// The goroutine ends when the future does (answer or timeout), even
		// if this lookup has moved on to a new owner.
		done := make(chan activation, 1)
		go func() {
			res, err := fut.Result()
			done <- activation{res, err}
		}()
	wait:
		for {
			select {
			case a := <-done:
				r, ok := a.res.(*cluster.ActivationResponse)
				if a.err != nil || !ok || r.Failed {
					return nil
				}
				return r.Pid
			case <-changed:
				now, next := l.owner(id)
				if now != owner {
					break wait // ask the new owner
				}
				changed = next
			}
		}
	}
	return nil
}

// RemovePid tells every member that an activation has ended.
func (l *Lookup) RemovePid(id *cluster.ClusterIdentity, pid *actor.PID) {
	l.cluster.MemberList.BroadcastEvent(&cluster.ActivationTerminated{Pid: pid, ClusterIdentity: id}, true)
}

type placed struct {
	id  *cluster.ClusterIdentity
	pid *actor.PID
}

// endedFlushEvery is how long an ended activation waits to be told to the
// members with the others that ended meanwhile: one message per member
// per interval instead of one per grain (a job grain ends for every job).
// A member's cached PID of an ended grain is dropped that much later: a
// request to it fails and looks the grain up afresh, as it did in the
// moment the notice was on its way.
const endedFlushEvery = 50 * time.Millisecond

// endedFlushAt is how many ended activations are told at once without
// waiting for the interval, which bounds one notice's size.
const endedFlushAt = 512

// flushEnded is the placement actor's timer: tell the ended activations.
type flushEnded struct{}

// placementActor owns this member's activations: it spawns a grain on the
// first request for it, and stops those a new topology places elsewhere.
type placementActor struct {
	cluster  *cluster.Cluster
	handOver map[string]bool   // kinds told Moved before they are stopped
	actors   map[string]placed // by identity key
	byPID    map[string]string // activation (PID id) → identity key
	// ended are the activations stopped since the last notice; flush is
	// its pending timer.
	ended []placed
	flush *time.Timer
}

func (p *placementActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Stopping:
		futures := make([]actor.Future, 0, len(p.actors))
		for _, a := range p.actors {
			futures = append(futures, ctx.PoisonFuture(a.pid))
		}
		for _, f := range futures {
			_ = f.Wait()
		}
	case *actor.Stopped:
		p.tellEnded() // the grains' ends that came while stopping
	case *flushEnded:
		p.flush = nil
		p.tellEnded()
	case *actor.Terminated:
		key, ok := p.byPID[msg.Who.Id]
		a := p.actors[key]
		if !ok || !a.pid.Equal(msg.Who) {
			return
		}
		if k := p.cluster.GetClusterKind(a.id.Kind); k != nil {
			k.Dec()
		}
		delete(p.actors, key)
		delete(p.byPID, msg.Who.Id)
		p.noteEnded(ctx, a)
	case *cluster.ActivationRequest:
		if pid := p.activate(ctx, msg.ClusterIdentity); pid != nil {
			ctx.Respond(&cluster.ActivationResponse{Pid: pid})
			return
		}
		ctx.Respond(&cluster.ActivationResponse{Failed: true})
	case *messages.GrainDeliver:
		// As an activation request does, this activates the grain whether
		// or not this member still owns it: a topology change stops the
		// activations it moved, and every grain lives with two copies for
		// that moment already.
		payload := msg.Message()
		if payload == nil {
			ctx.Logger().Warn("grain delivery without a payload", slog.String("kind", msg.Kind))
			return
		}
		if pid := p.activate(ctx, cluster.NewClusterIdentity(msg.Identity, msg.Kind)); pid != nil {
			ctx.Send(pid, payload)
		}
	case *cluster.ClusterTopology:
		rdv := cluster.NewRendezvous()
		rdv.UpdateMembers(msg.Members)
		self := p.cluster.ActorSystem.Address()
		for _, a := range p.actors {
			if owner := rdv.GetByClusterIdentity(a.id); owner != self {
				// Its owner is now another member. A kind that hands over
				// is told first: Moved and the PoisonPill are both user
				// messages from here, so it reads Moved before it stops.
				if p.handOver[a.id.Kind] {
					ctx.Send(a.pid, &Moved{Owner: owner})
				}
				ctx.Poison(a.pid)
			}
		}
	}
}

// activate returns id's activation on this member, spawning it if it is
// not up; nil for a kind this member does not host.
func (p *placementActor) activate(ctx actor.Context, id *cluster.ClusterIdentity) *actor.PID {
	key := id.AsKey()
	if a, ok := p.actors[key]; ok {
		return a.pid
	}
	kind := p.cluster.GetClusterKind(id.Kind)
	if kind == nil || slices.Contains(markerKinds, id.Kind) {
		ctx.Logger().Error("activation of an unknown kind", slog.String("kind", id.Kind))
		return nil
	}
	pid := ctx.SpawnPrefix(cluster.WithClusterIdentity(kind.Props, id), id.Identity)
	kind.Inc()
	p.actors[key] = placed{id: id, pid: pid}
	p.byPID[pid.Id] = key
	return pid
}

// noteEnded queues a's end for the next notice to the members, which
// every member takes to drop the PID it may have cached for a.
func (p *placementActor) noteEnded(ctx actor.Context, a placed) {
	p.ended = append(p.ended, a)
	switch {
	case len(p.ended) >= endedFlushAt:
		p.tellEnded()
	case p.flush == nil:
		self, root := ctx.Self(), p.cluster.ActorSystem.Root
		p.flush = time.AfterFunc(endedFlushEvery, func() { root.Send(self, &flushEnded{}) })
	}
}

// tellEnded sends the queued ends to every member's event stream, this
// one's included, in one cluster.PackedActivations: this member's address,
// and per kind each grain's identity and PID id.
func (p *placementActor) tellEnded() {
	if p.flush != nil {
		p.flush.Stop()
		p.flush = nil
	}
	if len(p.ended) == 0 {
		return
	}
	packed := &cluster.PackedActivations{Address: p.cluster.ActorSystem.Address()}
	byKind := map[string]*cluster.PackedActivations_Kind{}
	for _, a := range p.ended {
		k := byKind[a.id.Kind]
		if k == nil {
			k = &cluster.PackedActivations_Kind{Name: a.id.Kind}
			byKind[a.id.Kind] = k
			packed.Actors = append(packed.Actors, k)
		}
		k.Activations = append(k.Activations, &cluster.PackedActivations_Activation{Identity: a.id.Identity, ActivationId: a.pid.Id})
	}
	p.ended = p.ended[:0]
	p.cluster.MemberList.BroadcastEvent(packed, true)
}
