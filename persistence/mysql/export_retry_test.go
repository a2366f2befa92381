package mysql

// AddJobRetries is migration 3, for a database as a hub before retries
// left it.
var AddJobRetries = addJobRetries
