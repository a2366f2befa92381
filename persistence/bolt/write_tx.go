package bolt

import (
	"bytes"

	bbolt "go.etcd.io/bbolt"
)

// writeTx is one group commit's write transaction, shared by the writes
// of the group, with one cursor per bucket for their reads and deletes.
// bbolt's Bucket.Get and Delete each make a cursor whose path stack grows
// from empty (three allocations on a three-level tree), ~40 allocations
// per job's life; a cursor kept for the transaction reuses its stack.
// Puts still go through the bucket: bbolt has no cursor put.
type writeTx struct {
	tx      *bbolt.Tx
	cursors map[*bbolt.Bucket]*bbolt.Cursor
}

func newWriteTx(tx *bbolt.Tx) *writeTx {
	return &writeTx{tx: tx, cursors: make(map[*bbolt.Bucket]*bbolt.Cursor, 3)}
}

// bucket is the named top-level bucket.
func (w *writeTx) bucket(name []byte) *bbolt.Bucket { return w.tx.Bucket(name) }

// index is the named index bucket, set to split at indexFill.
func (w *writeTx) index(name []byte) *bbolt.Bucket { return indexBucket(w.tx, name) }

func (w *writeTx) cursor(b *bbolt.Bucket) *bbolt.Cursor {
	c := w.cursors[b]
	if c == nil {
		c = b.Cursor()
		w.cursors[b] = c
	}
	return c
}

// get is b.Get(key): the value, nil when key is absent. Like b.Get's, the
// value is valid only for the transaction.
func (w *writeTx) get(b *bbolt.Bucket, key []byte) []byte {
	k, v := w.cursor(b).Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// del is b.Delete(key): nothing happens when key is absent.
func (w *writeTx) del(b *bbolt.Bucket, key []byte) error {
	c := w.cursor(b)
	// Seek lands on key itself when it is there (it only steps to the
	// next page when key is past the end of one), so Delete removes it.
	if k, _ := c.Seek(key); !bytes.Equal(k, key) {
		return nil
	}
	return c.Delete()
}
