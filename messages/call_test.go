package messages

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

func TestAnsweringCopiesARepliedReply(t *testing.T) {
	r := &Reply{Ok: true, Code: "c", Message: "m", Json: []byte(`{}`), PlacedReported: true, Call: 4}
	require.Same(t, r, r.Answering(4), "already the answer to that call")
	c := r.Answering(9)
	require.NotSame(t, r, c)
	require.EqualValues(t, 4, r.Call, "the sent reply is not written")
	require.Equal(t, &Reply{Ok: true, Code: "c", Message: "m", Json: []byte(`{}`), PlacedReported: true, Call: 9}, c)
	require.Zero(t, r.Answering(0).Call, "a future's caller gets no id")
}

// Every message sent as a call carries its id across the wire.
func TestCalledMessagesCarryTheirID(t *testing.T) {
	for _, m := range []Called{&WorkerAssign{}, &WorkerConnected{}, &JobFinished{}, &ConnSend{}, &SchedPickSession{}} {
		m.SetCall(11)
		msg := m.(proto.Message)
		b, err := proto.Marshal(msg)
		require.NoError(t, err)
		back := msg.ProtoReflect().New().Interface()
		require.NoError(t, proto.Unmarshal(b, back))
		require.EqualValues(t, 11, back.(Called).GetCall(), "%T", m)
	}
}
