package api

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

const testSchema = `{"type":"object","required":["url"],"additionalProperties":false,
	"properties":{"url":{"type":"string","pattern":"^https?://"},"pages":{"type":"array","items":{"type":"integer","minimum":1}}}}`

func TestSchemaFaultNamesTheField(t *testing.T) {
	var c schemaCache
	sch, err := c.get(json.RawMessage(testSchema))
	require.NoError(t, err)
	cases := []struct{ params, field, msg string }{
		{`{}`, "params.url", "is required"},
		{`{"url":5}`, "params.url", "want string"},
		{`{"url":"ftp://x"}`, "params.url", "does not match pattern"},
		{`{"url":"http://x","pages":[1,0]}`, "params.pages[1]", "minimum"},
		{`{"url":"http://x","extra":1}`, "params.extra", "not allowed"},
	}
	for _, tc := range cases {
		doc, err := decodeInstance(json.RawMessage(tc.params))
		require.NoError(t, err)
		err = sch.Validate(doc)
		require.Error(t, err, tc.params)
		field, msg := schemaFault(err)
		require.Equal(t, tc.field, field, tc.params)
		require.Contains(t, msg, tc.msg, tc.params)
	}
	doc, err := decodeInstance(json.RawMessage(`{"url":"https://example.org","pages":[1,2]}`))
	require.NoError(t, err)
	require.NoError(t, sch.Validate(doc))
}

// TestSchemaNoExternalRefs: a worker's schema cannot make the hub read a
// file or dial a URL.
func TestSchemaNoExternalRefs(t *testing.T) {
	var c schemaCache
	for _, ref := range []string{"file:///etc/passwd", "http://127.0.0.1:1/x.json", "other.json"} {
		_, err := c.get(json.RawMessage(fmt.Sprintf(`{"$ref":%q}`, ref)))
		require.ErrorContains(t, err, "self-contained", ref)
	}
	_, err := c.get(json.RawMessage(`{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`))
	require.NoError(t, err, "a local $ref is fine")
}

func TestSchemaCacheBounded(t *testing.T) {
	var c schemaCache
	first := json.RawMessage(`{"title":"0"}`)
	a, err := c.get(first)
	require.NoError(t, err)
	b, err := c.get(first)
	require.NoError(t, err)
	require.Same(t, a, b, "compiled once")
	for i := 1; i <= maxCachedSchemas+10; i++ {
		_, err := c.get(json.RawMessage(fmt.Sprintf(`{"title":"%d"}`, i)))
		require.NoError(t, err)
	}
	require.Equal(t, maxCachedSchemas, c.Len())
	again, err := c.get(first)
	require.NoError(t, err)
	require.NotSame(t, a, again, "the oldest was evicted and compiled anew")
}
