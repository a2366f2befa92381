package messages

import "google.golang.org/protobuf/proto"

// Message is the payload d carries for its grain, nil when none is set.
func (d *GrainDeliver) Message() proto.Message {
	switch p := d.GetPayload().(type) {
	case *GrainDeliver_JobEnsure:
		if p.JobEnsure != nil {
			return p.JobEnsure
		}
	}
	return nil
}
