package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/redis/go-redis/v9"
)

// RedisProvider is cluster membership without extra infrastructure: each
// member keeps a key with a TTL (hub_ttl, 90 s) and an entry in a
// sorted-set index, and beats into it every timeout/3; every member reads
// the keys and hands protoactor the full list of members whose last beat
// is within timeout (member_timeout, 6 s). A hub joins by sharing the Redis
// URL; a dead hub leaves everyone's list within the timeout — fast enough
// for its workers to be taking jobs elsewhere within 10 s — while its key
// outlives it for the TTL.
//
// Two protoactor pitfalls shape it: a member missing from one topology
// update is blocked for good, so a failed read never publishes a topology;
// and a member that could not refresh its own key for longer than the TTL
// has been dropped by its peers, so it reports itself lost (OnLost) and
// must restart with a new member id rather than carry on.
//
// A hub killed outright need not wait out the timeout: when protoactor
// reports a peer's connection lost, the provider dials the peer's address,
// and a refused connection — nothing listens there any more — drops the
// member at once and marks it, so every peer drops it on its next read. A
// frozen or unreachable peer does not refuse (its socket is still open, or
// the dial times out), so only the timeout drops those.
type RedisProvider struct {
	rdb     redis.UniversalClient
	prefix  string
	ttl     time.Duration // key TTL
	timeout time.Duration // beats older than this: the member is gone
	refresh time.Duration // how often the member list is read
	log     *slog.Logger
	// OnLost is called (once, from the provider's goroutine) when this
	// member's own key lapsed. The hub exits non-zero; its supervisor starts
	// it again.
	OnLost func(error)

	// skew is added to the wall clock (tests jump it to act out a freeze).
	skew atomic.Int64

	mu      sync.Mutex
	cluster *cluster.Cluster
	self    memberRecord
	stop    chan struct{}
	done    chan struct{}
	lastSet time.Time
	last    []string // member ids of the last published topology
	// addrs maps the address of each member of the last read to its id,
	// for the connection-lost probe.
	addrs map[string]string
	// suspects carries addresses whose connection protoactor reported lost,
	// from the event stream to the probe loop; refusedNow wakes the read
	// loop when a probe was refused.
	suspects   chan string
	refusedNow chan struct{}
	sub        *eventstream.Subscription
}

type memberRecord struct {
	ID      string   `json:"id"`
	Host    string   `json:"host"`
	Port    int      `json:"port"`
	Kinds   []string `json:"kinds"`
	Cluster string   `json:"cluster"`
	Started int64    `json:"started_unix_ms"`
	Beat    int64    `json:"beat_unix_ms"`
}

// NewRedisProvider builds the provider; prefix namespaces its keys
// (default "paprika:"), ttl is cluster.hub_ttl (90 s), timeout is
// cluster.member_timeout (6 s; at most ttl).
func NewRedisProvider(rdb redis.UniversalClient, prefix string, ttl, timeout time.Duration, log *slog.Logger) *RedisProvider {
	if prefix == "" {
		prefix = "paprika:"
	}
	if timeout <= 0 || timeout > ttl {
		timeout = ttl
	}
	refresh := min(max(timeout/6, 100*time.Millisecond), 5*time.Second)
	return &RedisProvider{rdb: rdb, prefix: prefix, ttl: ttl, timeout: timeout, refresh: refresh, log: log}
}

func (p *RedisProvider) indexKey(cluster string) string { return p.prefix + "members:" + cluster }

// droppedKey marks a member that a peer dropped from its topology: the
// member sees it when it can beat again and knows it must leave.
func (p *RedisProvider) droppedKey(cluster, id string) string {
	return p.prefix + "member-dropped:" + cluster + ":" + id
}
func (p *RedisProvider) memberKey(cluster, id string) string {
	return p.prefix + "member:" + cluster + ":" + id
}

// StartMember registers this member and starts the refresh loop.
func (p *RedisProvider) StartMember(c *cluster.Cluster) error {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return fmt.Errorf("redis provider: member address: %w", err)
	}
	p.mu.Lock()
	p.cluster = c
	p.self = memberRecord{ID: c.ActorSystem.ID, Host: host, Port: port, Kinds: c.GetClusterKinds(),
		Cluster: c.Config.Name, Started: time.Now().UnixMilli()}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	p.suspects = make(chan string, 64)
	p.refusedNow = make(chan struct{}, 1)
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.register(ctx); err != nil {
		return fmt.Errorf("redis provider: register member: %w", err)
	}
	if err := p.sync(ctx); err != nil {
		return fmt.Errorf("redis provider: read members: %w", err)
	}
	suspects := p.suspects
	p.sub = c.ActorSystem.EventStream.SubscribeWithPredicate(func(ev interface{}) {
		// Published synchronously by protoactor: hand over, never block.
		select {
		case suspects <- ev.(*remote.EndpointTerminatedEvent).Address:
		default:
		}
	}, func(ev interface{}) bool { _, ok := ev.(*remote.EndpointTerminatedEvent); return ok })
	go p.loop(p.stop, p.done)
	return nil
}

// StartClient is not supported: every hub is a member.
func (p *RedisProvider) StartClient(*cluster.Cluster) error {
	return errors.New("redis provider: client mode is not supported")
}

// Shutdown stops the loop and removes this member at once, so peers move
// its grains now rather than after the TTL. Safe twice.
func (p *RedisProvider) Shutdown(bool) error {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop = nil
	p.mu.Unlock()
	if stop == nil {
		return nil
	}
	close(stop)
	<-done
	if p.sub != nil {
		p.cluster.ActorSystem.EventStream.Unsubscribe(p.sub)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pipe := p.rdb.TxPipeline()
	pipe.Del(ctx, p.memberKey(p.self.Cluster, p.self.ID))
	pipe.ZRem(ctx, p.indexKey(p.self.Cluster), p.self.ID)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis provider: deregister: %w", err)
	}
	return nil
}

func (p *RedisProvider) register(ctx context.Context) error {
	_, err := p.beat(ctx)
	return err
}

// beat writes this member's record and reports whether a peer has marked
// it dropped.
func (p *RedisProvider) beat(ctx context.Context) (dropped bool, err error) {
	now := p.now()
	p.mu.Lock()
	p.self.Beat = now.UnixMilli()
	b, _ := json.Marshal(p.self)
	p.mu.Unlock()
	pipe := p.rdb.TxPipeline()
	pipe.Set(ctx, p.memberKey(p.self.Cluster, p.self.ID), b, p.ttl)
	pipe.ZAdd(ctx, p.indexKey(p.self.Cluster), redis.Z{Score: float64(time.Now().UnixMilli()), Member: p.self.ID})
	marked := pipe.Exists(ctx, p.droppedKey(p.self.Cluster, p.self.ID))
	if _, err := pipe.Exec(ctx); err != nil {
		return false, err
	}
	p.mu.Lock()
	p.lastSet = now
	p.mu.Unlock()
	return marked.Val() > 0, nil
}

// sync reads the live members and publishes them; a failed read publishes
// nothing (the previous topology stands).
func (p *RedisProvider) sync(ctx context.Context) error {
	ids, err := p.rdb.ZRange(ctx, p.indexKey(p.self.Cluster), 0, -1).Result()
	if err != nil {
		return err
	}
	// Each member's record, then its dropped mark: a member one peer has
	// dropped is dropped by all, so that a peer's proof of death (a refused
	// connection) spreads without waiting for the timeout.
	keys := make([]string, 2*len(ids))
	for i, id := range ids {
		keys[i] = p.memberKey(p.self.Cluster, id)
		keys[len(ids)+i] = p.droppedKey(p.self.Cluster, id)
	}
	var vals, marks []interface{}
	if len(keys) > 0 {
		if vals, err = p.rdb.MGet(ctx, keys...).Result(); err != nil {
			return err
		}
		vals, marks = vals[:len(ids)], vals[len(ids):]
	}
	now := p.now()
	var dropped []string
	members := make([]*cluster.Member, 0, len(ids))
	var gone []interface{}
	selfSeen := false
	addrs := make(map[string]string, len(ids))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			gone = append(gone, ids[i])
			continue
		}
		var r memberRecord
		if json.Unmarshal([]byte(s), &r) != nil {
			continue
		}
		if r.ID != p.self.ID && marks[i] != nil {
			continue // a peer (or our probe) dropped it and marked it so
		}
		if r.ID != p.self.ID && now.Sub(time.UnixMilli(r.Beat)) > p.timeout {
			// Silent past the timeout: gone, though its key lingers. Mark it
			// dropped, so that should it resume it knows to leave.
			dropped = append(dropped, r.ID)
			continue
		}
		selfSeen = selfSeen || r.ID == p.self.ID
		m := &cluster.Member{Id: r.ID, Host: r.Host, Port: int32(r.Port), Kinds: r.Kinds}
		addrs[m.Address()] = r.ID
		members = append(members, m)
	}
	if !selfSeen {
		// Our own key is gone although we wrote it: never publish a list
		// without ourselves.
		return errors.New("own member key missing")
	}
	if len(gone) > 0 {
		// Index entries of expired members are kept for a while by the hub
		// registry's view; here they only cost a read, so prune them.
		_ = p.rdb.ZRem(ctx, p.indexKey(p.self.Cluster), gone...).Err()
	}
	p.mu.Lock()
	p.addrs = addrs
	p.mu.Unlock()
	for _, id := range dropped {
		if err := p.markDropped(ctx, id); err != nil {
			return err
		}
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Id < members[j].Id })
	idsNow := make([]string, len(members))
	for i, m := range members {
		idsNow[i] = m.Id
	}
	if !equalStrings(idsNow, p.last) {
		p.log.Info("cluster members changed", slog.Any("members", idsNow))
		p.last = idsNow
	}
	p.cluster.MemberList.UpdateClusterTopology(members)
	return nil
}

// loop runs the beat, the member read and the probe of lost peers on
// goroutines it owns: a
// topology update can block inside protoactor (its member list and gossip
// take locks), and the beat must not wait for it, or the member misses its
// own timeout and is dropped.
func (p *RedisProvider) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); p.beatLoop(stop) }()
	go func() { defer wg.Done(); p.readLoop(stop) }()
	go func() { defer wg.Done(); p.probeLoop(stop) }()
	wg.Wait()
}

func (p *RedisProvider) beatLoop(stop <-chan struct{}) {
	write := time.NewTicker(max(p.timeout/3, 100*time.Millisecond))
	defer write.Stop()
	lost := false
	for {
		select {
		case <-stop:
			return
		case <-write.C:
		}
		// A member silent past the timeout may have been dropped — or not:
		// when Redis itself was away, no peer could read the list either,
		// and a lone hub has no peer at all. Peers mark whom they drop; a
		// member that finds the mark (after a freeze, a GC pause, a cut
		// network) must leave, since protoactor never re-admits it.
		p.mu.Lock()
		since := p.now().Sub(p.lastSet)
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), max(p.timeout/3, time.Second))
		dropped, err := p.beat(ctx)
		cancel()
		if err != nil {
			p.log.Warn("cluster member refresh failed", slog.Any("err", err))
		}
		if !lost && dropped {
			lost = true
			err := fmt.Errorf("peers dropped this member (last beat %s before this one; member timeout %s)", since.Round(time.Millisecond), p.timeout)
			p.log.Error("cluster membership lost", slog.Any("err", err))
			if p.OnLost != nil {
				p.OnLost(err)
			}
		}
	}
}

func (p *RedisProvider) readLoop(stop <-chan struct{}) {
	read := time.NewTicker(p.refresh)
	defer read.Stop()
	for {
		select {
		case <-stop:
			return
		case <-read.C:
		case <-p.refusedNow:
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(p.refresh, time.Second))
		if err := p.sync(ctx); err != nil {
			p.log.Debug("cluster member read failed; keeping the last topology", slog.Any("err", err))
		}
		cancel()
	}
}

// probeAfter is when a member whose connection was lost is dialled,
// counted from the loss: a killed process may still be closing its
// listener at the first dial, so it is tried again shortly after.
var probeAfter = []time.Duration{0, 200 * time.Millisecond, time.Second}

// probeTimeout bounds one dial: a live peer on a reachable host accepts
// within it, a dead one refuses at once.
const probeTimeout = 500 * time.Millisecond

// probeLoop dials the members whose connection protoactor reported lost
// (see probeAfter) and wakes the read loop when one refuses.
func (p *RedisProvider) probeLoop(stop <-chan struct{}) {
	type check struct {
		addr string
		at   time.Time
	}
	var pending []check
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var due <-chan time.Time
		if len(pending) > 0 {
			timer.Reset(time.Until(pending[0].at))
			due = timer.C
		}
		select {
		case <-stop:
			return
		case addr := <-p.suspects:
			now := time.Now()
			for _, d := range probeAfter {
				pending = append(pending, check{addr: addr, at: now.Add(d)})
			}
			sort.SliceStable(pending, func(i, j int) bool { return pending[i].at.Before(pending[j].at) })
		case <-due:
		}
		for len(pending) > 0 && !pending[0].at.After(time.Now()) {
			addr := pending[0].addr
			pending = pending[1:]
			if !p.probe(addr) {
				continue
			}
			pending = slices.DeleteFunc(pending, func(c check) bool { return c.addr == addr })
			select {
			case p.refusedNow <- struct{}{}:
			default: // a read is already due
			}
		}
	}
}

// probe dials the address of a member whose connection was lost and
// reports whether it refused, in which case it is marked dropped (the next
// read drops it, here and at every peer). Only a refused connection
// counts: a timeout may be a slow or cut-off peer, which the member
// timeout must judge.
func (p *RedisProvider) probe(addr string) bool {
	p.mu.Lock()
	id, ok := p.addrs[addr]
	p.mu.Unlock()
	if !ok {
		return false
	}
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err == nil {
		_ = conn.Close()
		return false
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		p.log.Debug("lost peer did not answer the probe; left to the member timeout", slog.String("member", id), slog.Any("err", err))
		return false
	}
	p.log.Warn("cluster member refuses connections; dropping it now", slog.String("member", id), slog.String("address", addr))
	ctx, cancel := context.WithTimeout(context.Background(), max(p.refresh, time.Second))
	defer cancel()
	if err := p.markDropped(ctx, id); err != nil {
		p.log.Warn("could not mark a refusing member; left to the member timeout", slog.Any("err", err))
		return false
	}
	return true
}

// markDropped records that this member dropped id: every peer's next read
// drops it too, and id itself, should it still run, learns it must leave.
func (p *RedisProvider) markDropped(ctx context.Context, id string) error {
	if err := p.rdb.Set(ctx, p.droppedKey(p.self.Cluster, id), "1", p.ttl).Err(); err != nil {
		return fmt.Errorf("mark member %s dropped: %w", id, err)
	}
	return nil
}

func (p *RedisProvider) now() time.Time { return time.Now().Add(time.Duration(p.skew.Load())) }

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
