package miniostore

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// TestExactReader checks the size check fires before the last byte is
// handed out, whatever the chunking of the source.
func TestExactReader(t *testing.T) {
	t.Parallel()
	read := func(src io.Reader, size int64) (string, error) {
		var sb strings.Builder
		_, err := io.Copy(&sb, &exactReader{ctx: context.Background(), r: src, size: size})
		return sb.String(), err
	}
	for _, wrap := range []struct {
		name string
		f    func(io.Reader) io.Reader
	}{
		{"plain", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"data with EOF", iotest.DataErrReader},
		{"half", iotest.HalfReader},
	} {
		t.Run(wrap.name, func(t *testing.T) {
			got, err := read(wrap.f(strings.NewReader("12345")), 5)
			require.NoError(t, err)
			require.Equal(t, "12345", got)

			// Short: the body never reaches its announced length.
			_, err = read(wrap.f(strings.NewReader("12345")), 6)
			require.ErrorContains(t, err, "reader ended after 5 of 6 bytes")

			got, err = read(wrap.f(strings.NewReader("123456")), 5)
			require.ErrorContains(t, err, "more than the 5 bytes")
			require.Less(t, len(got), 5, "the last byte is never handed out")
		})
	}

	boom := errors.New("boom")
	_, err := read(io.MultiReader(strings.NewReader("12"), iotest.ErrReader(boom)), 5)
	require.ErrorIs(t, err, boom)
	var src *sourceError
	require.ErrorAs(t, err, &src)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = io.ReadAll(&exactReader{ctx: ctx, r: strings.NewReader("x"), size: 1})
	require.ErrorIs(t, err, context.Canceled)
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"page.html", "job-1", "a b", "ünïcode", "x.y.z", strings.Repeat("a", maxNameLen)} {
		require.NoError(t, checkName(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", "/abs", `a\b`, `..\x`, ".hidden", "nul\x00", "\xff", strings.Repeat("a", maxNameLen+1)} {
		require.Error(t, checkName(bad), "%q", bad)
	}
}
