// Package config owns Paprika's configuration: the one Config struct with a
// section per top-level key of config.yaml, the built-in defaults as named
// constants, the layering, and the checks.
//
// Layers, each overriding the one before: built-in defaults (Default) →
// config.yaml (the path given, else ./config.yaml when it exists; unknown
// keys are errors) → environment (PAPRIKA_ + the key path upper-cased with
// "." → "_", e.g. PAPRIKA_RECONCILER_ORPHAN_GRACE=5s; the source system's
// PAPRIKA_QUEUE_REDRIVE_INTERVAL_S and PAPRIKA_QUEUE_REDRIVE_DISABLE are
// aliases) → flags, applied by the command with Set. All layers share one
// parser: strings as given, integers, booleans (strconv.ParseBool) and Go
// durations ("90s", "1.5s", "100ms").
//
// A command uses it like this:
//
//	cfg, err := config.Load(*configPath, os.Environ())
//	if err == nil && *listen != "" {
//		err = cfg.Set("hub.listen", *listen)
//	}
//	if err == nil {
//		err = cfg.Validate() // again: flags may have changed things
//	}
//	if err != nil {
//		fmt.Fprintln(os.Stderr, "paprika hub:", err)
//		return 2
//	}
//
// Every error is a *KeyError naming the YAML key and what is allowed, all
// problems at once (errors.Join). WriteYAML prints the effective
// configuration with secrets masked (for `--print-config`). Secrets
// (auth.*, minio.secret_key, passwords inside redis.url and mysql.dsn) belong
// in the environment in production, never in a committed config.yaml.
package config
