package api

import (
	"fmt"
	"net/http"
	"slices"
)

// Limits are the bounds of config's limits section the API enforces. A zero
// field takes the built-in default below (config's), so an Options built
// without them (tests, embedders) is still bounded.
type Limits struct {
	MaxParamsBytes     int // limits.max_params_bytes
	MaxLabels          int // limits.max_labels
	MaxLabelKeyBytes   int // limits.max_label_key_bytes
	MaxLabelValueBytes int // limits.max_label_value_bytes
}

// Built-in defaults of Limits, the same as config's.
const (
	defaultMaxParamsBytes     = 64 << 10
	defaultMaxLabels          = 32
	defaultMaxLabelKeyBytes   = 128
	defaultMaxLabelValueBytes = 1024
)

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxParamsBytes, defaultMaxParamsBytes)
	def(&l.MaxLabels, defaultMaxLabels)
	def(&l.MaxLabelKeyBytes, defaultMaxLabelKeyBytes)
	def(&l.MaxLabelValueBytes, defaultMaxLabelValueBytes)
	return l
}

// limitError is the answer to a request over one of the limits: the usual
// error shape plus "limit" (the config key to raise) and "max" (its value),
// so a client can tell which bound it hit without parsing the message.
func limitError(status int, code, key string, max int, format string, args ...any) *Error {
	e := Errorf(status, code, "%s (%s is %d)", fmt.Sprintf(format, args...), key, max)
	e.Extra = map[string]any{"limit": key, "max": max}
	return e
}

// checkParams refuses params over limits.max_params_bytes with a 413.
func (l Limits) checkParams(params []byte) error {
	if len(params) > l.MaxParamsBytes {
		return limitError(http.StatusRequestEntityTooLarge, "params_too_large", "limits.max_params_bytes", l.MaxParamsBytes,
			"params are %d bytes, over the limit", len(params))
	}
	return nil
}

// checkLabels refuses too many labels, or a label key or value too long,
// with a 400 naming the limit and (for a length) the label's key. Keys are
// visited in order so the same request always names the same label.
func (l Limits) checkLabels(labels map[string]string) error {
	if len(labels) > l.MaxLabels {
		return limitError(http.StatusBadRequest, "bad_labels", "limits.max_labels", l.MaxLabels,
			"%d labels, over the limit", len(labels))
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if len(k) > l.MaxLabelKeyBytes {
			e := limitError(http.StatusBadRequest, "bad_labels", "limits.max_label_key_bytes", l.MaxLabelKeyBytes,
				"label key %.40q… is %d bytes, over the limit", k, len(k))
			e.Extra["label"] = k[:min(len(k), 64)]
			return e
		}
		if v := labels[k]; len(v) > l.MaxLabelValueBytes {
			e := limitError(http.StatusBadRequest, "bad_labels", "limits.max_label_value_bytes", l.MaxLabelValueBytes,
				"label %q has a value of %d bytes, over the limit", k, len(v))
			e.Extra["label"] = k
			return e
		}
	}
	return nil
}
