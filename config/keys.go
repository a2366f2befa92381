package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// field is one leaf key of Config, found once by reflection over the yaml
// tags so that the key list, the env names and the struct never drift.
type field struct {
	key     string // "reconciler.orphan_grace"
	section string // "reconciler"
	index   []int  // for reflect.Value.FieldByIndex
	kind    valueKind
}

type valueKind int

const (
	kindString valueKind = iota
	kindBool
	kindInt
	kindDuration
)

var durationType = reflect.TypeFor[time.Duration]()

// fields lists every leaf key in declaration order; byKey indexes it.
var fields, byKey = buildFields()

func buildFields() ([]field, map[string]field) {
	var list []field
	idx := map[string]field{}
	root := reflect.TypeFor[Config]()
	for i := range root.NumField() {
		sf := root.Field(i)
		section := yamlName(sf)
		if section == "" {
			continue // unexported bookkeeping
		}
		for j := range sf.Type.NumField() {
			lf := sf.Type.Field(j)
			f := field{
				key:     section + "." + yamlName(lf),
				section: section,
				index:   []int{i, j},
			}
			switch {
			case lf.Type == durationType:
				f.kind = kindDuration
			case lf.Type.Kind() == reflect.String:
				f.kind = kindString
			case lf.Type.Kind() == reflect.Bool:
				f.kind = kindBool
			case lf.Type.Kind() == reflect.Int:
				f.kind = kindInt
			default:
				panic(fmt.Sprintf("config: key %s has unsupported type %s", f.key, lf.Type))
			}
			list = append(list, f)
			idx[f.key] = f
		}
	}
	return list, idx
}

func yamlName(sf reflect.StructField) string {
	if !sf.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
	return name
}

// secretKeys are masked by WriteYAML. URL and DSN keys are not listed: only
// their password part is masked.
var secretKeys = map[string]bool{
	"auth.worker_token":  true,
	"auth.api_token":     true,
	"auth.worker_secret": true,
	"auth.params_key":    true,
	"minio.secret_key":   true,
}

// Keys returns every configuration key ("hub.listen", ...) in the order of
// config.yaml.
func Keys() []string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.key
	}
	return keys
}

// EnvName returns the environment variable that sets key:
// "PAPRIKA_" + key upper-cased with "." → "_".
func EnvName(key string) string {
	return "PAPRIKA_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Set parses value with the same parser as config.yaml and the environment
// and stores it under key, recording the origin as "flag". It is how
// commands apply their flags (cfg.Set("hub.listen", *listen)). It returns a
// *KeyError when key is unknown, value does not parse, or the key's own
// check (range, allowed values, address syntax) fails; checks that involve
// several keys are left to Validate.
func (c *Config) Set(key, value string) error {
	return c.set(key, value, "flag")
}

// set is Set with an explicit origin.
func (c *Config) set(key, value, origin string) error {
	f, ok := byKey[key]
	if !ok {
		return &KeyError{Key: key, Msg: "unknown key" + suggest(key), Origin: origin}
	}
	v := reflect.ValueOf(c).Elem().FieldByIndex(f.index)
	if msg := parseInto(v, f.kind, value); msg != "" {
		return &KeyError{Key: key, Msg: msg, Origin: origin}
	}
	c.setOrigin(key, origin)
	if check := fieldChecks[key]; check != nil {
		if msg := check(c); msg != "" {
			return &KeyError{Key: key, Msg: msg, Origin: origin}
		}
	}
	return nil
}

func (c *Config) setOrigin(key, origin string) {
	if c.origin == nil {
		c.origin = map[string]string{}
	}
	c.origin[key] = origin
}

// Origin tells where key's current value came from: "default",
// "file PATH:LINE", "env NAME" or "flag".
func (c *Config) Origin(key string) string {
	if o, ok := c.origin[key]; ok {
		return o
	}
	return "default"
}

// Get returns key's current value in the form config.yaml uses (durations
// as "90s", "1.5s", "100ms"), unmasked.
func (c *Config) Get(key string) (string, error) {
	f, ok := byKey[key]
	if !ok {
		return "", &KeyError{Key: key, Msg: "unknown key" + suggest(key)}
	}
	return formatValue(reflect.ValueOf(c).Elem().FieldByIndex(f.index), f.kind), nil
}

// parseInto parses s for a field of kind k and stores it in v; it returns a
// message naming the allowed form, or "" on success.
func parseInto(v reflect.Value, k valueKind, s string) string {
	switch k {
	case kindString:
		v.SetString(s)
	case kindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Sprintf("%q is not a boolean (true or false)", s)
		}
		v.SetBool(b)
	case kindInt:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Sprintf("%q is not an integer", s)
		}
		v.SetInt(int64(n))
	case kindDuration:
		t := strings.TrimSpace(s)
		d, err := time.ParseDuration(t)
		if err != nil {
			if _, nerr := strconv.ParseFloat(t, 64); nerr == nil {
				return fmt.Sprintf("%q has no unit; give a Go duration such as %ss", s, t)
			}
			return fmt.Sprintf("%q is not a Go duration (e.g. 90s, 1.5s, 100ms, 24h)", s)
		}
		v.SetInt(int64(d))
	}
	return ""
}

// formatValue renders v the way config.yaml writes it.
func formatValue(v reflect.Value, k valueKind) string {
	switch k {
	case kindBool:
		return strconv.FormatBool(v.Bool())
	case kindInt:
		return strconv.FormatInt(v.Int(), 10)
	case kindDuration:
		return FormatDuration(time.Duration(v.Int()))
	default:
		return v.String()
	}
}

// FormatDuration writes d in the largest whole unit that keeps it exact,
// the way config.yaml writes durations: 90s stays "90s" (not "1m30s"),
// 24h is "24h", 1.5s is "1.5s", 100ms is "100ms".
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0 && (d < time.Second && d > -time.Second):
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	case d%time.Millisecond == 0:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	default:
		return d.String()
	}
}

// suggest names the keys of the section an unknown key seems to belong to,
// so a typo is one look away from its fix.
func suggest(key string) string {
	section, _, _ := strings.Cut(key, ".")
	var known []string
	for _, f := range fields {
		if f.section == section {
			known = append(known, strings.TrimPrefix(f.key, section+"."))
		}
	}
	if len(known) > 0 {
		return fmt.Sprintf(" (%s has: %s)", section, strings.Join(known, ", "))
	}
	return " (sections: " + strings.Join(sections(), ", ") + ")"
}

// sections lists the top-level keys in order.
func sections() []string {
	var out []string
	for _, f := range fields {
		if !slices.Contains(out, f.section) {
			out = append(out, f.section)
		}
	}
	return out
}
