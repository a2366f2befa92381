package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"sort"
	"strings"

	"github.com/paprika-hub/paprika/client"
	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/internal/certs"
)

// Environment variables the client commands read.
const (
	envHub      = "PAPRIKA_HUB"            // default --hub (a comma list)
	envToken    = "PAPRIKA_API_TOKEN"      // default --token
	envTokenAlt = "PAPRIKA_AUTH_API_TOKEN" // the hub's own name for the same secret
	envCA       = "PAPRIKA_CA"             // default --ca of the client commands and of paprika worker
)

// defaultHubURL is where `paprika up` and `paprika hub` listen by default.
const defaultHubURL = "http://" + config.DefaultHubListen

// newFlagSet returns a flag set that reports nothing itself: the command
// prints one line per error (usageError) and its help on -h (printHelp).
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("paprika "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses flags wherever they appear among the positional
// arguments (`paprika jobs logs ID -f` as well as `-f ID`); everything
// after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseOrExit parses args for a command. It returns the positional
// arguments and -1, or an exit status: 0 after printing help for -h, 2
// after printing one line for a bad flag.
func (c *cli) parseOrExit(fs *flag.FlagSet, synopsis string, args []string) ([]string, int) {
	pos, err := parseArgs(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.printHelp(fs, synopsis)
		return nil, exitOK
	case err != nil:
		return nil, c.usageError(fs.Name(), err.Error())
	}
	return pos, -1
}

// subcommand splits the subcommand off the arguments of a command that has
// some: the first argument unless it is a flag, else "ls". With a help
// flag in its place it prints the synopsis and help and returns exitOK;
// otherwise code is -1.
func (c *cli) subcommand(args []string, synopsis, help string) (sub string, rest []string, code int) {
	switch {
	case len(args) > 0 && isHelp(args[0]):
		fmt.Fprintf(c.stdout, "Usage: %s\n\n%s", synopsis, help)
		return "", nil, exitOK
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		return args[0], args[1:], -1
	default:
		return "ls", args, -1
	}
}

// isHelp reports a help flag given in place of a subcommand.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h"
}

// printHelp writes a command's synopsis and flags to stdout.
func (c *cli) printHelp(fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(c.stdout, "Usage: %s\n", synopsis)
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if b.Len() > 0 {
		fmt.Fprintf(c.stdout, "\nFlags:\n%s", b.String())
	}
}

// usageError prints "paprika CMD: msg (see paprika CMD -h)" on stderr and
// returns exit status 2.
func (c *cli) usageError(name, msg string) int {
	fmt.Fprintf(c.stderr, "%s: %s (see %s -h)\n", name, msg, name)
	return exitUsage
}

// clientFlags are the flags every command that talks to a hub shares.
type clientFlags struct {
	hubs  listFlag
	token string
	ca    string
	json  bool
}

// addClientFlags registers --hub, --token, --ca and --json on fs.
func (c *cli) addClientFlags(fs *flag.FlagSet) *clientFlags {
	cf := &clientFlags{}
	fs.Var(&cf.hubs, "hub", "hub `URL`; a comma list or repeated to fail over (default $"+envHub+" or "+defaultHubURL+")")
	fs.StringVar(&cf.token, "token", "", "API bearer `token` (default $"+envToken+")")
	fs.StringVar(&cf.ca, "ca", "", "PEM `file` of the CA that signed the hubs' HTTPS certificates, e.g. from paprika certs ca (default $"+envCA+"; else the system roots)")
	fs.BoolVar(&cf.json, "json", false, "print JSON instead of text")
	return cf
}

// newClient builds the SDK client from the flags, falling back to the
// environment and then to the local default hub.
func (c *cli) newClient(cf *clientFlags) (*client.Client, error) {
	hubs := []string(cf.hubs)
	if len(hubs) == 0 {
		if env := strings.TrimSpace(c.getenv(envHub)); env != "" {
			hubs = []string{env}
		} else {
			hubs = []string{defaultHubURL}
		}
	}
	token := cf.token
	if token == "" {
		token = c.getenv(envToken)
	}
	if token == "" {
		token = c.getenv(envTokenAlt)
	}
	opts := []client.Option{client.WithToken(token)}
	if c.httpClient != nil {
		opts = append(opts, client.WithHTTPClient(c.httpClient))
	}
	if ca := cmp.Or(cf.ca, c.getenv(envCA)); ca != "" {
		pool, err := certs.LoadPool(ca)
		if err != nil {
			return nil, &caError{err}
		}
		opts = append(opts, client.WithRootCAs(pool))
	}
	return client.New(hubs, opts...)
}

// caError marks a --ca file that does not load, so that hubClient names
// the right flag.
type caError struct{ err error }

func (e *caError) Error() string { return e.err.Error() }
func (e *caError) Unwrap() error { return e.err }

// hubClient is newClient for a command: a bad --hub or --ca is a usage
// error of fs, returned as code (-1 otherwise).
func (c *cli) hubClient(fs *flag.FlagSet, cf *clientFlags) (*client.Client, int) {
	cl, err := c.newClient(cf)
	if err != nil {
		var ce *caError
		if errors.As(err, &ce) {
			return nil, c.usageError(fs.Name(), "flag -ca: "+err.Error())
		}
		return nil, c.usageError(fs.Name(), "flag -hub: "+err.Error())
	}
	return cl, -1
}

// listFlag collects a repeatable flag whose values may also be comma lists.
type listFlag []string

// String implements flag.Value.
func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value.
func (l *listFlag) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	if len(*l) == 0 {
		return errors.New("empty")
	}
	return nil
}

// labelFlag collects repeated KEY=VALUE string pairs (--label).
type labelFlag map[string]string

// String implements flag.Value.
func (m labelFlag) String() string { return joinPairs(m) }

// Set implements flag.Value.
func (m labelFlag) Set(v string) error {
	k, val, err := splitPair(v)
	if err != nil {
		return err
	}
	m[k] = val
	return nil
}

// paramFlag collects repeated KEY=VALUE job parameters (--param). A value
// that parses as JSON is sent as that JSON (numbers, booleans, null, arrays,
// objects, quoted strings); anything else is sent as a string. KEY=@FILE
// reads the value from FILE (parsed the same way); KEY=@@TEXT sends the
// string "@TEXT".
type paramFlag struct {
	values   map[string]json.RawMessage
	readFile func(string) ([]byte, error)
}

func newParamFlag() *paramFlag {
	return &paramFlag{values: map[string]json.RawMessage{}, readFile: os.ReadFile}
}

// String implements flag.Value.
func (p *paramFlag) String() string {
	if p == nil {
		return ""
	}
	m := make(map[string]string, len(p.values))
	for k, v := range p.values {
		m[k] = string(v)
	}
	return joinPairs(m)
}

// Set implements flag.Value.
func (p *paramFlag) Set(v string) error {
	k, val, err := splitPair(v)
	if err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(val, "@@"):
		val = val[1:]
	case strings.HasPrefix(val, "@"):
		b, err := p.readFile(val[1:])
		if pe, ok := errors.AsType[*iofs.PathError](err); ok {
			err = pe.Err // the path is in the message already
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", val[1:], err)
		}
		val = strings.TrimSuffix(string(b), "\n")
	}
	p.values[k] = paramValue(val)
	return nil
}

// params returns the collected values in the form SubmitRequest takes.
func (p *paramFlag) params() map[string]any {
	if len(p.values) == 0 {
		return nil
	}
	out := make(map[string]any, len(p.values))
	for k, v := range p.values {
		out[k] = v
	}
	return out
}

// paramValue is s as JSON when it is JSON, else s as a JSON string.
func paramValue(s string) json.RawMessage {
	var b bytes.Buffer
	if strings.TrimSpace(s) != "" && json.Valid([]byte(s)) && json.Compact(&b, []byte(s)) == nil {
		return b.Bytes()
	}
	quoted, _ := json.Marshal(s) // a string always encodes
	return quoted
}

// splitPair splits KEY=VALUE; the key must not be empty.
func splitPair(v string) (string, string, error) {
	k, val, ok := strings.Cut(v, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", errors.New("want KEY=VALUE")
	}
	return k, val, nil
}

func joinPairs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}
