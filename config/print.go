package config

import (
	"fmt"
	"io"
	"net/url"
	"reflect"
	"strings"

	"github.com/go-sql-driver/mysql"
	"gopkg.in/yaml.v3"
)

// masked replaces a secret in printed configuration.
const masked = "***"

// WriteYAML writes the effective configuration as YAML in config.yaml's
// order, with secrets masked (auth tokens, minio.secret_key, and the
// password inside redis.url and mysql.dsn). A value that does not come
// from the defaults carries a comment naming its origin ("# env
// PAPRIKA_HUB_LISTEN"). The output loads back with Load, masks aside.
func (c *Config) WriteYAML(w io.Writer) error {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	var section *yaml.Node
	rv := reflect.ValueOf(c).Elem()
	for _, f := range fields {
		if len(doc.Content) == 0 || doc.Content[len(doc.Content)-2].Value != f.section {
			section = &yaml.Node{Kind: yaml.MappingNode}
			doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f.section}, section)
		}
		val := &yaml.Node{Kind: yaml.ScalarNode, Value: c.display(f, rv.FieldByIndex(f.index))}
		switch f.kind {
		case kindBool:
			val.Tag = "!!bool"
		case kindInt:
			val.Tag = "!!int"
		default:
			val.Tag = "!!str"
		}
		if o := c.Origin(f.key); o != "default" {
			val.LineComment = o
		}
		name := f.key[len(f.section)+1:]
		section.Content = append(section.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, val)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("config: write yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("config: write yaml: %w", err)
	}
	return nil
}

// display is a field's printed value, secrets masked.
func (c *Config) display(f field, v reflect.Value) string {
	s := formatValue(v, f.kind)
	switch {
	case s == "":
		return s
	case secretKeys[f.key]:
		return masked
	case f.key == "redis.url":
		return maskURL(s)
	case f.key == "mysql.dsn":
		return maskDSN(s)
	}
	return s
}

// maskURL hides the password of a URL; an unparsable URL is hidden whole.
func maskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return masked
	}
	if _, has := u.User.Password(); !has {
		return s
	}
	// url.URL would escape "***" as %2A%2A%2A; swap in a placeholder.
	const placeholder = "MASKEDPASSWORD"
	u.User = url.UserPassword(u.User.Username(), placeholder)
	return strings.Replace(u.String(), placeholder, masked, 1)
}

// maskDSN hides the password of a MySQL DSN; an unparsable DSN is hidden
// whole.
func maskDSN(s string) string {
	cfg, err := mysql.ParseDSN(s)
	if err != nil {
		return masked
	}
	if cfg.Passwd != "" {
		cfg.Passwd = masked
	}
	return cfg.FormatDSN()
}
