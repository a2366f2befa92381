package grains

import "github.com/asynkron/protoactor-go/cluster"

// mintTries bounds how many ids a submission draws looking for one whose
// grain this hub owns. With n hubs a draw is this hub's with chance 1/n, so
// 8 draws find one for 96 % of jobs on 3 hubs and 57 % on 10; a draw is a
// ULID and one rendezvous hash per member, about a microsecond on 3 hubs.
const mintTries = 8

// owner is what ownedHere asks of the identity lookup (membership.Lookup).
type owner interface {
	OwnerOf(identity, kind string) string
}

// ownedHere returns whether this member owns a grain of kind by identity
// under its current view of the topology; nil when the lookup cannot tell
// or the cluster has one member (every id is this hub's then).
func ownedHere(cl *cluster.Cluster, kind string) func(identity string) bool {
	o := ownerLookup(cl)
	if o == nil {
		return nil
	}
	self := cl.ActorSystem.Address()
	return func(identity string) bool { return o.OwnerOf(identity, kind) == self }
}

// OwnerOf is the cluster address of the member that places the grain of
// kind by identity under this member's view of the topology; "" when the
// lookup cannot tell or the cluster has one member.
func OwnerOf(cl *cluster.Cluster, identity, kind string) string {
	o := ownerLookup(cl)
	if o == nil {
		return ""
	}
	return o.OwnerOf(identity, kind)
}

// ownerLookup is the cluster's identity lookup when it can tell a grain's
// owner and there is more than one member to choose from; nil otherwise.
func ownerLookup(cl *cluster.Cluster) owner {
	o, ok := cl.Config.IdentityLookup.(owner)
	if !ok || cl.MemberList.Length() < 2 {
		return nil
	}
	return o
}

// mintLocal draws job ids until one's grain is this hub's (owns), at most
// mintTries, and returns the last. A job minted here lives on the hub that
// took it: its wake (which carries the record just stored) is a local
// message instead of one to the owner, two jobs in three on three hubs,
// and its grain's turns are spread over the hubs as the clients spread
// their submissions. It is a preference, never a rule: a topology change
// moves the grain like any other, and an id owned elsewhere works as
// before. The ids keep their
// order (persistence.NewJobID is monotonic within a process).
func mintLocal(mint func() string, owns func(string) bool) string {
	id := mint()
	if owns == nil {
		return id
	}
	for i := 1; i < mintTries && !owns(id); i++ {
		id = mint()
	}
	return id
}
