// Command attacker is a stranger on a hub's cluster port, for the e2e
// security tests (e2e/security_attacks_test.go builds and runs it). It
// holds no certificate from the cluster CA and tries what anyone reaching
// the port could do before cluster TLS: start a plain protoactor remote and
// send a hub's WorkerConn a ConnSend (an assign_job for a job that exists
// nowhere) and a ConnClose (cut the worker's link), and open a TLS
// connection without a client certificate. It prints one JSON object with
// what each try got and exits 0; judging it is the test's job.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/paprika-hub/paprika/messages"
)

// outcome is what the attacker reports.
type outcome struct {
	// TLSNoCert is the error of a TLS dial that brings no certificate
	// ("" if the hub took it).
	TLSNoCert string `json:"tls_no_cert"`
	// ConnSend is the error of a ConnSend asking for an ack ("" if the
	// WorkerConn queued the frame).
	ConnSend string `json:"conn_send"`
	// ConnClose says a ConnClose was sent (fire and forget: the test sees
	// its effect, or not, on the worker's link).
	ConnClose bool `json:"conn_close"`
}

func main() {
	cluster := flag.String("cluster", "", "the hub's cluster address host:port")
	target := flag.String("target", "", "the WorkerConn to hit: host:port/actor-id")
	jobID := flag.String("job", "phantom", "the id of the job that exists nowhere")
	wait := flag.Duration("wait", 3*time.Second, "how long to wait for an answer")
	flag.Parse()
	if *cluster == "" || !strings.Contains(*target, "/") {
		fmt.Fprintln(os.Stderr, "usage: attacker --cluster HOST:PORT --target HOST:PORT/ACTOR [--job ID]")
		os.Exit(2)
	}
	var out outcome
	out.TLSNoCert = dialTLSWithoutCert(*cluster, *wait)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	addr, id, _ := strings.Cut(*target, "/")
	frame, _ := json.Marshal(messages.Frame{Type: messages.TypeAssignJob, JobID: *jobID, Attempt: 1, Mode: messages.ModeNoop,
		Params: []byte(`{"lines":1}`)})
	res, err := system.Root.RequestFuture(actor.NewPID(addr, id), &messages.ConnSend{Frame: frame, Ack: true}, *wait).Result()
	switch {
	case err != nil:
		out.ConnSend = err.Error()
	default:
		if rep, ok := res.(*messages.Reply); ok && !rep.Ok {
			out.ConnSend = "refused: " + rep.Code + " " + rep.Message
		}
	}
	system.Root.Send(actor.NewPID(addr, id), &messages.ConnClose{Code: "pwned", Message: "cut by a stranger"})
	out.ConnClose = true
	time.Sleep(*wait) // the endpoint writer's chance to deliver it
	r.Shutdown(false)
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

// dialTLSWithoutCert opens TLS to addr without a client certificate. It
// skips verifying the hub (the stranger has no CA either): the point is
// what the hub does with a peer that proves nothing. In TLS 1.3 the hub's
// refusal arrives with the first read.
func dialTLSWithoutCert(addr string, wait time.Duration) string {
	d := &net.Dialer{Timeout: wait}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the stranger verifies nothing
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		return err.Error()
	}
	return ""
}
