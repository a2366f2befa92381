//go:build !race

package hub

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// TestMultiMemberModes: a worker linked to hub A declares a mode; hub B
// lists it in GET /modes, checks its params against its schema and places
// its jobs on it, from the fleet-wide registry.
func TestMultiMemberModes(t *testing.T) {
	a, b := twoHubs(t)
	l := dialRawLinkModes(t, a.URL(), "w-decl", 2, messages.ModeDecl{Name: "pdf-diff", Schema: json.RawMessage(pdfDiffSchema)})

	require.Eventually(t, func() bool { return getModes(t, b.URL())["pdf-diff"].Workers == 1 },
		10*time.Second, 50*time.Millisecond, "hub B sees the mode")
	m := getModes(t, b.URL())["pdf-diff"]
	require.JSONEq(t, pdfDiffSchema, string(m.Schema))
	require.Equal(t, 2, m.Lanes)

	st, body := do(t, "POST", b.URL()+"/jobs", `{"mode":"pdf-diff","params":{"url":5}}`)
	require.Equal(t, http.StatusBadRequest, st, string(body))
	require.Equal(t, "params.url", decodeAPIError(t, body).Error.Field)

	j := submit(t, b.URL(), `{"mode":"pdf-diff","params":{"url":"https://example.org"}}`)
	f := nextAssign(l, 10*time.Second)
	require.Equal(t, messages.TypeAssignJob, f.Type)
	require.Equal(t, j.ID, f.JobID)
	require.Equal(t, "pdf-diff", f.Mode)
}
