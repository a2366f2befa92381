package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteBatchIsWriteJSON: the batch answer written by hand is the
// bytes writeJSON writes for the same BatchResponse.
func TestWriteBatchIsWriteJSON(t *testing.T) {
	out := BatchResponse{Results: []BatchItem{
		{Status: 201, Job: json.RawMessage(`{"id":"j-1","labels":{"a":"\u003cb\u003e"}}`)},
		{Status: 400, Error: json.RawMessage(`{"code":"bad_json","message":"the item is not a JSON object"}`)},
		{Status: 200, Job: json.RawMessage(`{"id":"j-0"}`)},
	}}
	for _, o := range []BatchResponse{out, {Results: out.Results[:1]}} {
		hand, std := httptest.NewRecorder(), httptest.NewRecorder()
		writeBatch(hand, http.StatusMultiStatus, o)
		writeJSON(std, http.StatusMultiStatus, o)
		require.Equal(t, std.Code, hand.Code)
		require.Equal(t, std.Header(), hand.Header())
		require.Equal(t, std.Body.String(), hand.Body.String())
	}
}
