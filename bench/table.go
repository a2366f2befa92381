package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// printTable writes one row per system: medians over the rounds.
func printTable(w io.Writer, systems []system, res map[string][]result, o options) {
	fmt.Fprintf(w, "\n%d no-op jobs per run, %d producers, %d slots, %d rounds (medians); latency: %d jobs paced at %.0f/s\n\n",
		o.jobs, o.producers, o.lanes, o.rounds, o.paced, o.rate)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tjobs/s\tCPU s/1k jobs: total\tper process\tstatements/job\tp50\tp99\tfreed lane → next p50\tp99\tfreed slot → next p50\tp99\tpaced CPU s/1k: total\tper process\t")
	for _, s := range systems {
		rs := res[s.name()]
		var jps []float64
		perProc := map[string][]float64{}
		perStore := map[string][]float64{}
		var totals []float64
		var p50, p99, g50, g99, s50, s99 []float64
		pacedProc := map[string][]float64{}
		var pacedTotals []float64
		for _, r := range rs {
			pacedTotals = append(pacedTotals, addCPU(pacedProc, r.pacedCPUPerK))
			jps = append(jps, r.jobsPerSec)
			totals = append(totals, addCPU(perProc, r.cpuPerK))
			for k, v := range r.stmts {
				if strings.Contains(k, "/") {
					continue // a grain message breakdown: printed per round only
				}
				perStore[k] = append(perStore[k], v)
			}
			p50 = append(p50, float64(r.p50))
			p99 = append(p99, float64(r.p99))
			if r.gaps > 0 {
				g50 = append(g50, float64(r.gapP50))
				g99 = append(g99, float64(r.gapP99))
			}
			if r.slots > 0 {
				s50 = append(s50, float64(r.slotP50))
				s99 = append(s99, float64(r.slotP99))
			}
		}
		gap50, gap99 := "-", "-"
		if len(g50) > 0 {
			gap50, gap99 = ms(median(g50)), ms(median(g99))
		}
		slot50, slot99 := "-", "-"
		if len(s50) > 0 {
			slot50, slot99 = ms(median(s50)), ms(median(s99))
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t\n", s.name(), median(jps), median(totals),
			medians(perProc, 3), medians(perStore, 1), ms(median(p50)), ms(median(p99)), gap50, gap99, slot50, slot99, median(pacedTotals), medians(pacedProc, 3))
	}
	_ = tw.Flush()
}

// addCPU appends each process's figure of one round to perProc and
// returns their total.
func addCPU(perProc map[string][]float64, round map[string]float64) float64 {
	t := 0.0
	for k, v := range round {
		perProc[k] = append(perProc[k], v)
		t += v
	}
	return t
}

func medians(m map[string][]float64, prec int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.*f", k, prec, median(m[k])))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func ms(ns float64) string {
	return fmt.Sprintf("%.1f ms", ns/float64(time.Millisecond))
}
