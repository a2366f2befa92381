package mysql

// Internals the external tests need.
var (
	MigrateLockName = migrateLockName
	MigrationCount  = len(migrations)
)

// The schema of migration 1, and the migrations table, for a database as a
// hub before priorities left it.
const (
	CreateJobsTableV1     = createJobsTable
	CreateMigrationsTable = createMigrationsTable
	AddJobPriority        = addJobPriority
)

// TruncatedMark ends an error message cut to fit its column.
const TruncatedMark = truncatedMark
