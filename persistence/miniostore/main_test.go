package miniostore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks no test leaves a goroutine behind. minio-go keeps idle
// HTTP connections (a read and a write goroutine each); every Store and
// test client is closed in its test's cleanup, which drops them, so no
// goroutine needs ignoring here.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
