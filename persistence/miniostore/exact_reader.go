package miniostore

import (
	"context"
	"fmt"
	"io"
)

// exactReader hands out exactly size bytes of r and fails the upload if r
// has fewer or more. The check must happen before the last byte is handed
// out: once the server has the whole body it stores the object, whatever
// the client thinks afterwards. So the Read that would complete the body
// first reads one byte further, and returns an error instead of the data
// when there is one.
type exactReader struct {
	ctx  context.Context
	r    io.Reader
	size int64
	read int64 // bytes taken from r
}

func (e *exactReader) Read(p []byte) (int, error) {
	if err := e.ctx.Err(); err != nil {
		return 0, &sourceError{err}
	}
	left := e.size - e.read
	if left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := e.r.Read(p)
	e.read += int64(n)
	switch {
	case err == io.EOF && e.read < e.size:
		return 0, &sourceError{fmt.Errorf("reader ended after %d of %d bytes", e.read, e.size)}
	case err != nil && err != io.EOF:
		return 0, &sourceError{fmt.Errorf("read after %d of %d bytes: %w", e.read, e.size, err)}
	case e.read < e.size:
		return n, nil
	case err == nil:
		// The last bytes: hand them out only if r ends here.
		if err := requireEOF(e.r, e.size); err != nil {
			return 0, err
		}
	}
	return n, io.EOF
}

// requireEOF checks that r, after size bytes, has nothing more.
func requireEOF(r io.Reader, size int64) error {
	var b [1]byte
	n, err := io.ReadFull(r, b[:])
	switch {
	case n > 0:
		return &sourceError{fmt.Errorf("reader has more than the %d bytes announced", size)}
	case err != io.EOF:
		return &sourceError{fmt.Errorf("read after %d bytes: %w", size, err)}
	}
	return nil
}

// ctxReader stops an upload of unknown size when its context ends, between
// two reads of the caller's reader (minio-go reads a whole part before it
// sends anything, so the request's own context would notice late).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, &sourceError{err}
	}
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		err = &sourceError{err}
	}
	return n, err
}

// sourceError is an error of the caller's side of a Put — its reader, or
// its context ending between reads — kept apart from the server's errors:
// it is never persistence.ErrUnavailable.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }
