package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMedian(t *testing.T) {
	require.Equal(t, 0.0, median(nil))
	require.Equal(t, 3.0, median([]float64{5, 1, 3}))
	require.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	xs := []float64{3, 1, 2}
	median(xs)
	require.Equal(t, []float64{3, 1, 2}, xs, "the input keeps its order")
}

func TestPairedRatios(t *testing.T) {
	require.Equal(t, []float64{0.5, 2}, pairedRatios([]float64{1, 4, 9}, []float64{2, 2}))
	require.Empty(t, pairedRatios([]float64{1}, []float64{0}), "a zero baseline is left out")
}
