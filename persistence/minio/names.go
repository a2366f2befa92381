package miniostore

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxNameLen bounds job ids and asset names, as in the local-dir store;
// a key stays far below S3's 1,024 bytes.
const maxNameLen = 200

// checkNames validates a job id and an asset name.
func checkNames(jobID, name string) error {
	if err := checkName(jobID); err != nil {
		return fmt.Errorf("job id: %w", err)
	}
	if err := checkName(name); err != nil {
		return fmt.Errorf("asset name: %w", err)
	}
	return nil
}

// checkName accepts what the local-dir store accepts — a single path
// element that does not start with a dot (which also rules out "." and
// ".."), has no separator of any OS and no NUL — and, as S3 keys must be,
// valid UTF-8. So an asset stored here could be copied to local disk, and
// "<jobID>/" lists exactly one job's assets.
func checkName(n string) error {
	switch {
	case n == "":
		return errors.New("empty")
	case len(n) > maxNameLen:
		return fmt.Errorf("%.20q…: longer than %d bytes", n, maxNameLen)
	case strings.HasPrefix(n, "."):
		return fmt.Errorf("%q starts with a dot", n)
	case strings.ContainsAny(n, "/\\\x00"):
		return fmt.Errorf("%q is not a single path element", n)
	case !utf8.ValidString(n):
		return fmt.Errorf("%q is not valid UTF-8", n)
	}
	return nil
}
