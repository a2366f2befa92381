package mysql

import (
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// TestInterpolateParamsByDefault: one round trip per statement unless the
// DSN says otherwise, and never for a charset the driver cannot escape.
func TestInterpolateParamsByDefault(t *testing.T) {
	parse := func(dsn string) bool {
		cfg, err := gomysql.ParseDSN(withInterpolation(dsn))
		if err != nil {
			cfg, err = gomysql.ParseDSN(dsn)
		}
		require.NoError(t, err)
		return cfg.InterpolateParams
	}
	require.True(t, parse("u:p@tcp(127.0.0.1:3306)/db"))
	require.True(t, parse("u:p@tcp(127.0.0.1:3306)/db?parseTime=true"))
	require.False(t, parse("u:p@tcp(127.0.0.1:3306)/db?interpolateParams=false"), "the DSN's own choice stays")
	require.False(t, parse("u:p@tcp(127.0.0.1:3306)/db?charset=gbk"), "a charset of its own: prepared statements stay")
}
