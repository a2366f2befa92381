package loadgen_test

import "go.uber.org/goleak"

// leakOptions ignores what the in-process hub of the Run tests leaves
// behind after Stop: protoactor's throttles and its local cluster
// provider's TTL reporter never end (see STYLE.md on protoactor's
// hygiene). Every goroutine of package loadgen must be gone.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster/clusterproviders/test.(*Provider).startTTLReport.func1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	}
}
