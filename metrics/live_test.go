package metrics

import (
	"reflect"

	"github.com/prometheus/client_golang/prometheus"
)

// liveFields counts the families of the live view's metrics, after giving
// each labelled one a series (so that every family is exposed).
func liveFields(m *Metrics) int {
	m.Live.Frames.WithLabelValues(LiveFramesSent).Inc()
	m.Live.Refused.WithLabelValues("message").Inc()
	n := 0
	v := reflect.ValueOf(m.Live).Elem()
	for i := range v.NumField() {
		if _, ok := v.Field(i).Interface().(prometheus.Collector); ok {
			n++
		}
	}
	return n
}
