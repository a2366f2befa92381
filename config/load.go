package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultPath is the file Load reads when it is given no path and the file
// exists in the working directory.
const DefaultPath = "config.yaml"

// Env aliases kept from the source system's names (API.md).
const (
	// EnvRedriveIntervalSeconds sets redrive.interval in whole seconds.
	EnvRedriveIntervalSeconds = "PAPRIKA_QUEUE_REDRIVE_INTERVAL_S"
	// EnvRedriveDisable sets redrive.disable (1/true or 0/false).
	EnvRedriveDisable = "PAPRIKA_QUEUE_REDRIVE_DISABLE"
)

// Load builds the configuration in layers: the built-in defaults, then the
// YAML file at path (or ./config.yaml when path is "" and that file exists),
// then the environment (env is os.Environ()-style "KEY=VALUE"; each key's
// variable is EnvName(key); empty values count as unset; the canonical name
// wins over its alias). Flags come last: the caller applies them with Set
// and then calls Validate again.
//
// Load reports every problem at once, joined: a file that cannot be read or
// is not YAML, unknown keys, values that do not parse, and everything
// Validate finds.
func Load(path string, env []string) (*Config, error) {
	c := Default()
	if path == "" {
		if _, err := os.Stat(DefaultPath); err == nil {
			path = DefaultPath
		}
	}
	var errs []error
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		errs = append(errs, c.applyYAML(path, data)...)
	}
	errs = append(errs, c.applyEnv(env)...)

	// Validate re-finds the one-key problems set already reported; keep
	// each key's first report only.
	reported := map[string]bool{}
	for _, err := range errs {
		if ke, ok := errors.AsType[*KeyError](err); ok {
			reported[ke.Key] = true
		}
	}
	if verr := c.Validate(); verr != nil {
		for _, err := range verr.(interface{ Unwrap() []error }).Unwrap() {
			if ke, ok := errors.AsType[*KeyError](err); ok && reported[ke.Key] {
				continue
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// applyYAML sets every key the document names, through the same parser as
// env and flags. Unknown keys and duplicate keys are errors.
func (c *Config) applyYAML(path string, data []byte) []error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return []error{fmt.Errorf("%s: %w", path, err)}
	}
	if len(doc.Content) == 0 {
		return nil // empty file
	}
	root := deref(doc.Content[0])
	if isNull(root) {
		return nil
	}
	at := func(n *yaml.Node) string { return fmt.Sprintf("file %s:%d", path, n.Line) }
	if root.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("%s:%d: the top level must be a mapping of sections (%s)",
			path, root.Line, strings.Join(sections(), ", "))}
	}
	var errs []error
	seen := map[string]int{}
	dup := func(key string, n *yaml.Node) error {
		if first, ok := seen[key]; ok {
			return &KeyError{Key: key, Msg: fmt.Sprintf("given twice (first on line %d)", first), Origin: at(n)}
		}
		seen[key] = n.Line
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		sk, sv := root.Content[i], deref(root.Content[i+1])
		section := sk.Value
		if err := dup(section, sk); err != nil {
			errs = append(errs, err)
			continue
		}
		if !slices.Contains(sections(), section) {
			errs = append(errs, &KeyError{Key: section, Msg: "unknown key" + suggest(section), Origin: at(sk)})
			continue
		}
		if isNull(sv) {
			continue // "hub:" with every key commented out
		}
		if sv.Kind != yaml.MappingNode {
			errs = append(errs, &KeyError{Key: section, Msg: "must be a mapping of keys" + suggest(section+"."), Origin: at(sv)})
			continue
		}
		for j := 0; j+1 < len(sv.Content); j += 2 {
			lk, lv := sv.Content[j], deref(sv.Content[j+1])
			key := section + "." + lk.Value
			if err := dup(key, lk); err != nil {
				errs = append(errs, err)
				continue
			}
			if _, ok := byKey[key]; !ok {
				errs = append(errs, &KeyError{Key: key, Msg: "unknown key" + suggest(key), Origin: at(lk)})
				continue
			}
			if isNull(lv) {
				continue // "id:" or "id: ~" keeps the default
			}
			if lv.Kind != yaml.ScalarNode {
				errs = append(errs, &KeyError{Key: key, Msg: "must be a single value, not a list or mapping", Origin: at(lv)})
				continue
			}
			if err := c.set(key, lv.Value, at(lv)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// applyEnv applies the aliases, then every key's own variable, so the
// canonical name wins when both are set.
func (c *Config) applyEnv(env []string) []error {
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "PAPRIKA_") {
			vars[k] = v // later entries win, as in os/exec
		}
	}
	var errs []error
	if v := strings.TrimSpace(vars[EnvRedriveIntervalSeconds]); v != "" {
		origin := "env " + EnvRedriveIntervalSeconds
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, &KeyError{Key: "redrive.interval", Msg: fmt.Sprintf("%q is not a whole number of seconds", v), Origin: origin})
		} else if err := c.set("redrive.interval", FormatDuration(time.Duration(n)*time.Second), origin); err != nil {
			errs = append(errs, err)
		}
	}
	if v := vars[EnvRedriveDisable]; v != "" {
		if err := c.set("redrive.disable", v, "env "+EnvRedriveDisable); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range fields {
		name := EnvName(f.key)
		if v := vars[name]; v != "" {
			if err := c.set(f.key, v, "env "+name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}
