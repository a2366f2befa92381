package api

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxCachedSchemas bounds the compiled schemas a hub keeps. Each distinct
// schema a worker declares is compiled once; a fleet declares a few, and a
// worker that churns through schemas only evicts the oldest.
const maxCachedSchemas = 256

// schemaCache compiles declared JSON Schemas once each, keyed by the
// SHA-256 of their compact text, least recently used out first. Safe for
// concurrent use.
type schemaCache struct {
	mu    sync.Mutex
	byKey map[[sha256.Size]byte]*list.Element // of *compiledSchema
	order list.List                           // most recently used first
}

type compiledSchema struct {
	key    [sha256.Size]byte
	schema *jsonschema.Schema
	err    error // the schema does not compile; kept so it is not retried per request
}

// get returns raw compiled, or why it does not compile.
func (c *schemaCache) get(raw json.RawMessage) (*jsonschema.Schema, error) {
	key := sha256.Sum256(raw)
	c.mu.Lock()
	if c.byKey == nil {
		c.byKey = map[[sha256.Size]byte]*list.Element{}
	}
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		cs := e.Value.(*compiledSchema)
		c.mu.Unlock()
		return cs.schema, cs.err
	}
	c.mu.Unlock()
	// Compiled outside the lock: two requests may compile one schema at
	// once, and the second store wins; both results are the same.
	sch, err := compileSchema(raw, hex.EncodeToString(key[:8]))
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		return sch, err
	}
	c.byKey[key] = c.order.PushFront(&compiledSchema{key: key, schema: sch, err: err})
	for c.order.Len() > maxCachedSchemas {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byKey, old.Value.(*compiledSchema).key)
	}
	return sch, err
}

// Len is the number of schemas kept.
func (c *schemaCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// noLoader refuses every external reference: a schema comes from a
// worker, and a "$ref" to a file or URL would have the hub read its own
// disk or dial out on the worker's say.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q: a declared schema must be self-contained", url)
}

// compileSchema compiles one declared schema (draft 2020-12 unless it
// names its own $schema).
func compileSchema(raw json.RawMessage, name string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	// An http base, so that a relative $ref resolves to a URL the loader
	// refuses (under a urn it would resolve to the schema itself).
	url := "https://paprika.invalid/mode-schemas/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// schemaPrinter renders validation messages.
var schemaPrinter = message.NewPrinter(language.English)

// schemaFault is the first thing wrong with params under a schema: the
// field ("params.url", "params.steps[2]", "params" for the object itself)
// and what is wrong with it.
func schemaFault(err error) (field, msg string) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "params", err.Error()
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := ve.InstanceLocation
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		if len(k.Missing) > 0 {
			loc = append(cloneLoc(loc), k.Missing[0])
			return fieldPath(loc), "is required"
		}
	case *kind.AdditionalProperties:
		if len(k.Properties) > 0 {
			loc = append(cloneLoc(loc), k.Properties[0])
			return fieldPath(loc), "is not allowed (additionalProperties)"
		}
	}
	return fieldPath(loc), ve.ErrorKind.LocalizedString(schemaPrinter)
}

func cloneLoc(s []string) []string { return append([]string(nil), s...) }

// fieldPath spells an instance location the way the other params errors
// do: params.a.b[3].
func fieldPath(loc []string) string {
	var b strings.Builder
	b.WriteString("params")
	for _, tok := range loc {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		b.WriteString("." + tok)
	}
	return b.String()
}

// decodeInstance decodes params as the validator reads them (numbers kept
// exact).
func decodeInstance(params json.RawMessage) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(params))
}
