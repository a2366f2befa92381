package mysql

// Internals the external tests need.
var (
	MigrateLockName = migrateLockName
	MigrationCount  = len(migrations)
)

// TruncatedMark ends an error message cut to fit its column.
const TruncatedMark = truncatedMark
