package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/internal/credential"
)

func TestSecurityTokenWorkerPrintsTheBoundCredential(t *testing.T) {
	const secret = "cli-worker-secret-0123456789"
	env := map[string]string{"PAPRIKA_AUTH_WORKER_SECRET": secret}
	r := runCLI(t, env, "token", "worker", "--id", "w50150")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	id, ok := credential.WorkerID(secret, lines[len(lines)-1])
	require.True(t, ok, "the last line is the credential")
	require.Equal(t, "w50150", id)

	for _, bad := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"token", "worker", "--id", "w1"}, "is not set"},
		{map[string]string{"PAPRIKA_AUTH_WORKER_SECRET": "short"}, []string{"token", "worker", "--id", "w1"}, "at least 16 bytes"},
		{env, []string{"token", "worker", "--id", "a.b"}, "--id"},
		{env, []string{"token", "api"}, "usage"},
	} {
		r := runCLI(t, bad.env, bad.args...)
		require.Equal(t, exitUsage, r.code, bad.args)
		require.Contains(t, r.stderr, bad.want, bad.args)
		require.Empty(t, r.stdout, "no credential printed on a refusal")
	}
}
