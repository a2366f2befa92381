package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

// TestFetchParamsPDFAndFullPage: pdf and full_page are booleans; another
// type is a 400 naming the field.
func TestFetchParamsPDFAndFullPage(t *testing.T) {
	t.Parallel()
	ok := `{"url":"https://example.org/","pdf":true,"full_page":false}`
	require.NoError(t, ValidateParams(messages.ModeFetch, json.RawMessage(ok)))
	for field, raw := range map[string]string{
		"pdf":       `{"url":"https://example.org/","pdf":"yes"}`,
		"full_page": `{"url":"https://example.org/","full_page":1}`,
	} {
		err := ValidateParams(messages.ModeFetch, json.RawMessage(raw))
		var e *Error
		require.True(t, errors.As(err, &e), "%v", err)
		require.Equal(t, http.StatusBadRequest, e.Status)
		require.Equal(t, "bad_params", e.Code)
		require.Contains(t, e.Message, "params."+field+" must be a bool", field)
	}
}

func TestIsSessionID(t *testing.T) {
	t.Parallel()
	require.True(t, isSessionID("s-0123abcd"))
	require.False(t, isSessionID("01HZX3V5K8Q2R7M9N4P6T1W0YB"), "a job id")
	require.False(t, isSessionID("s-../x"))
}
