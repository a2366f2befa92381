package client

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// TestModesAreTheWireContracts: the SDK spells the job modes itself (see
// ModeNoop) so that it does not import package messages; this test, which
// may, holds the two spellings together.
func TestModesAreTheWireContracts(t *testing.T) {
	require.Equal(t, messages.Modes, []string{ModeNoop, ModeFetch, ModeMacro})
}

// TestOpsAreTheWireContracts holds the SDK's command ops to the wire
// contract's, as TestModesAreTheWireContracts does the modes.
func TestOpsAreTheWireContracts(t *testing.T) {
	require.Equal(t, messages.StepOps, []string{OpNavigate, OpClick, OpType, OpWait, OpScreenshot, OpText, OpEval})
}
