package main

import (
	"flag"
	"fmt"

	"github.com/paprika-hub/paprika/config"
	"github.com/paprika-hub/paprika/internal/credential"
)

// token is `paprika token worker --id ID`: it prints that worker's
// credential, made from auth.worker_secret in the environment, as its last
// line (so a script can take it with tail -1). Only whoever holds the
// secret can make one; the hubs need no list of issued credentials.
func (c *cli) token(args []string) int {
	if len(args) == 0 || args[0] != "worker" {
		fmt.Fprintln(c.stderr, "usage: paprika token worker --id ID   (with $"+config.EnvName("auth.worker_secret")+" set)")
		return exitUsage
	}
	fs := flag.NewFlagSet("paprika token worker", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	id := fs.String("id", "", "the worker id the credential is bound to (required)")
	if err := fs.Parse(args[1:]); err != nil {
		return exitUsage
	}
	env := config.EnvName("auth.worker_secret")
	secret := c.getenv(env)
	switch {
	case !credential.ValidID(*id):
		fmt.Fprintf(c.stderr, "paprika token worker: --id %q: use 1-64 of A-Z a-z 0-9 _ -\n", *id)
		return exitUsage
	case secret == "":
		fmt.Fprintf(c.stderr, "paprika token worker: $%s is not set (the hubs' auth.worker_secret)\n", env)
		return exitUsage
	case len(secret) < credential.MinSecretBytes:
		fmt.Fprintf(c.stderr, "paprika token worker: $%s must be at least %d bytes\n", env, credential.MinSecretBytes)
		return exitUsage
	}
	fmt.Fprintf(c.stdout, "# worker %s: paprika worker --id %s --token <the line below>\n", *id, *id)
	fmt.Fprintln(c.stdout, credential.Worker(secret, *id))
	return exitOK
}
