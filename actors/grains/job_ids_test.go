package grains

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMintLocal(t *testing.T) {
	counter := func() (func() string, *int) {
		n := 0
		return func() string { n++; return strconv.Itoa(n) }, &n
	}

	mint, n := counter()
	require.Equal(t, "1", mintLocal(mint, nil), "one member: the first id")
	require.Equal(t, 1, *n)

	mint, n = counter()
	third := func(id string) bool { v, _ := strconv.Atoi(id); return v%3 == 0 }
	require.Equal(t, "3", mintLocal(mint, third), "the first id this member owns")
	require.Equal(t, 3, *n)

	mint, n = counter()
	never := func(string) bool { return false }
	require.Equal(t, strconv.Itoa(mintTries), mintLocal(mint, never), "owned elsewhere after mintTries: the last draw")
	require.Equal(t, mintTries, *n, "draws are bounded")
}
