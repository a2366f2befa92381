package messages

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVocabularyIsAPIs pins the spelled values to API.md: they are the
// external interface, so a rename here must fail a test, not pass quietly.
func TestVocabularyIsAPIs(t *testing.T) {
	require.Equal(t, []string{"noop", "fetch", "macro"}, Modes)
	require.Equal(t, []string{"navigate", "click", "type", "wait", "screenshot", "text", "eval"}, StepOps)
	require.Equal(t, "open", OpOpen)
	require.Equal(t, "close", OpClose)
	require.Equal(t, "simulated", DriverSimulated)
	require.Equal(t, "chromium", DriverChromium)
	for _, op := range StepOps {
		require.True(t, IsStepOp(op), op)
	}
	for _, s := range []string{"", "Noop", OpOpen, OpClose, ModeFetch} {
		require.False(t, IsStepOp(s), "%q is not a step op", s)
	}
}
