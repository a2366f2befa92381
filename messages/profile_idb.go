package messages

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// Bounds of the IndexedDB part of a profile state. A restore costs one
// local navigation per origin and a put per record, so both are bounded
// apart from the state's bytes.
const (
	// MaxProfileIDBOrigins bounds the origins whose IndexedDB a state holds.
	MaxProfileIDBOrigins = 20
	// MaxProfileIDBDatabases bounds the databases of one origin.
	MaxProfileIDBDatabases = 50
	// MaxProfileIDBStores bounds the object stores of one database.
	MaxProfileIDBStores = 100
	// MaxProfileIDBIndexes bounds the indexes of one object store.
	MaxProfileIDBIndexes = 50
	// MaxProfileIDBRecords bounds the records of a whole state.
	MaxProfileIDBRecords = 50000
	// MaxProfileIDBDepth bounds the nesting of one encoded key or value.
	MaxProfileIDBDepth = 64
)

// IDBDatabase is one IndexedDB database of an origin in a profile state.
type IDBDatabase struct {
	// Name is the database's name.
	Name string `json:"name"`
	// Version is its version, 1..2^53-1.
	Version int64 `json:"version"`
	// Stores are its object stores.
	Stores []IDBStore `json:"stores"`
}

// IDBStore is one object store and its records.
type IDBStore struct {
	// Name is the store's name.
	Name string `json:"name"`
	// KeyPath is null (out-of-line keys), a string or an array of strings.
	KeyPath json.RawMessage `json:"key_path"`
	// AutoIncrement: the store has a key generator.
	AutoIncrement bool `json:"auto_increment,omitempty"`
	// Indexes are the store's indexes.
	Indexes []IDBIndex `json:"indexes,omitempty"`
	// Records are the store's records in key order.
	Records []IDBRecord `json:"records"`
}

// IDBIndex is one index of an object store.
type IDBIndex struct {
	// Name is the index's name.
	Name string `json:"name"`
	// KeyPath is a string or an array of strings.
	KeyPath json.RawMessage `json:"key_path"`
	// Unique: no two records share a key of the index.
	Unique bool `json:"unique,omitempty"`
	// MultiEntry: an array key path value adds one entry per element.
	MultiEntry bool `json:"multi_entry,omitempty"`
}

// IDBRecord is one record: its primary key and its value, each in the
// tagged JSON of structured-clone data (IDBValueTags).
type IDBRecord struct {
	// Key is the record's primary key.
	Key json.RawMessage `json:"k"`
	// Value is the record's value.
	Value json.RawMessage `json:"v"`
}

// IDBValueTags documents the tagged JSON of keys and values: null,
// booleans, strings, finite numbers and arrays stand for themselves; every
// other value is an object whose "$" names it: {"$":"u"} undefined,
// {"$":"n","v":"NaN"|"Infinity"|"-Infinity"|"-0"}, {"$":"big","v":"123"},
// {"$":"date","v":ms|null}, {"$":"re","v":source,"f":flags},
// {"$":"ab","v":base64} (ArrayBuffer), {"$":"view","k":"Uint8Array"…,"v":base64},
// {"$":"map","v":[[k,v]…]}, {"$":"set","v":[…]}, {"$":"obj","v":{…}}.
// A key may only be a number, string, date, binary (ab, view) or an array
// of keys. The chromium driver's scripts write and read it.
const IDBValueTags = "u n big date re ab view map set obj"

// idbViewSizes are the typed arrays (and DataView) a "view" may name,
// with their element sizes.
var idbViewSizes = map[string]int{
	"Int8Array": 1, "Uint8Array": 1, "Uint8ClampedArray": 1, "Int16Array": 2, "Uint16Array": 2,
	"Int32Array": 4, "Uint32Array": 4, "Float32Array": 4, "Float64Array": 8,
	"BigInt64Array": 8, "BigUint64Array": 8, "DataView": 1,
}

var (
	// A key path's part: an ECMAScript identifier (the common subset).
	idbKeyPathPart = regexp.MustCompile(`^[\p{L}\p{Nl}$_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}$_\x{200C}\x{200D}]*$`)
	idbBigInt      = regexp.MustCompile(`^-?[0-9]{1,1000}$`)
	idbRegExpFlags = regexp.MustCompile(`^[dgimsuvy]{0,8}$`)
)

// checkIndexedDB validates the IndexedDB part of a state: bounds, names,
// key paths, and every record's encoding, so that what a worker sent
// restores without surprises on another worker.
func checkIndexedDB(idb map[string][]IDBDatabase) error {
	if len(idb) > MaxProfileIDBOrigins {
		return fmt.Errorf("IndexedDB of %d origins, at most %d", len(idb), MaxProfileIDBOrigins)
	}
	records := 0
	for o, dbs := range idb {
		if err := checkOrigin(o); err != nil {
			return err
		}
		if len(dbs) > MaxProfileIDBDatabases {
			return fmt.Errorf("IndexedDB of %s: %d databases, at most %d", o, len(dbs), MaxProfileIDBDatabases)
		}
		dbNames := map[string]bool{}
		for _, db := range dbs {
			where := fmt.Sprintf("IndexedDB of %s, database %.80q", o, db.Name)
			if dbNames[db.Name] {
				return fmt.Errorf("%s: listed twice", where)
			}
			dbNames[db.Name] = true
			if db.Version < 1 || db.Version > 1<<53-1 {
				return fmt.Errorf("%s: version %d out of range 1..2^53-1", where, db.Version)
			}
			if len(db.Stores) > MaxProfileIDBStores {
				return fmt.Errorf("%s: %d object stores, at most %d", where, len(db.Stores), MaxProfileIDBStores)
			}
			storeNames := map[string]bool{}
			for _, s := range db.Stores {
				where := fmt.Sprintf("%s, store %.80q", where, s.Name)
				if storeNames[s.Name] {
					return fmt.Errorf("%s: listed twice", where)
				}
				storeNames[s.Name] = true
				if err := checkStore(s); err != nil {
					return fmt.Errorf("%s: %w", where, err)
				}
				records += len(s.Records)
				if records > MaxProfileIDBRecords {
					return fmt.Errorf("IndexedDB: more than %d records", MaxProfileIDBRecords)
				}
			}
		}
	}
	return nil
}

// checkStore validates one store: what IDBDatabase.createObjectStore and
// createIndex would refuse is refused here, and each record's encoding.
func checkStore(s IDBStore) error {
	kp, err := parseKeyPath(s.KeyPath, true)
	if err != nil {
		return fmt.Errorf("key_path: %w", err)
	}
	if s.AutoIncrement && (kp.array || (kp.set && kp.paths[0] == "")) {
		return errors.New("auto_increment needs no key path or a non-empty string one")
	}
	if len(s.Indexes) > MaxProfileIDBIndexes {
		return fmt.Errorf("%d indexes, at most %d", len(s.Indexes), MaxProfileIDBIndexes)
	}
	names := map[string]bool{}
	for _, ix := range s.Indexes {
		if names[ix.Name] {
			return fmt.Errorf("index %.80q listed twice", ix.Name)
		}
		names[ix.Name] = true
		ikp, err := parseKeyPath(ix.KeyPath, false)
		if err != nil {
			return fmt.Errorf("index %.80q: key_path: %w", ix.Name, err)
		}
		if ix.MultiEntry && ikp.array {
			return fmt.Errorf("index %.80q: multi_entry with an array key path", ix.Name)
		}
	}
	for i, r := range s.Records {
		if err := checkIDBData(r.Key, true); err != nil {
			return fmt.Errorf("record %d: key: %w", i, err)
		}
		if err := checkIDBData(r.Value, false); err != nil {
			return fmt.Errorf("record %d: value: %w", i, err)
		}
	}
	return nil
}

// keyPath is a parsed key path.
type keyPath struct {
	set   bool // not null
	array bool
	paths []string
}

// parseKeyPath reads null (when nullable), a string or a non-empty array
// of strings; each string is "" or dot-separated identifiers.
func parseKeyPath(raw json.RawMessage, nullable bool) (keyPath, error) {
	var kp keyPath
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		if !nullable {
			return kp, errors.New("required")
		}
		return kp, nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return kp, err
		}
		kp.paths = []string{s}
	case raw[0] == '[':
		if err := json.Unmarshal(raw, &kp.paths); err != nil {
			return kp, err
		}
		if len(kp.paths) == 0 || len(kp.paths) > MaxProfileIDBIndexes {
			return kp, fmt.Errorf("an array of 1..%d strings", MaxProfileIDBIndexes)
		}
		kp.array = true
	default:
		return kp, errors.New("null, a string or an array of strings")
	}
	kp.set = true
	for _, p := range kp.paths {
		if p == "" {
			if kp.array {
				return kp, errors.New(`"" in an array key path`)
			}
			continue
		}
		for part := range bytes.SplitSeq([]byte(p), []byte(".")) {
			if !idbKeyPathPart.Match(part) {
				return kp, fmt.Errorf("%.80q is not a key path", p)
			}
		}
	}
	return kp, nil
}

// checkIDBData validates one key (isKey) or value in the tagged JSON.
func checkIDBData(raw json.RawMessage, isKey bool) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("missing")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return checkIDBValue(v, isKey, 0)
}

func checkIDBValue(v any, isKey bool, depth int) error {
	if depth > MaxProfileIDBDepth {
		return fmt.Errorf("nested deeper than %d", MaxProfileIDBDepth)
	}
	notKey := func(what string) error {
		if isKey {
			return fmt.Errorf("%s is not a valid key", what)
		}
		return nil
	}
	switch v := v.(type) {
	case nil:
		return notKey("null")
	case bool:
		return notKey("a boolean")
	case string, json.Number:
		return nil
	case []any:
		for _, e := range v {
			if err := checkIDBValue(e, isKey, depth+1); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		return checkIDBTagged(v, isKey, depth)
	}
	return fmt.Errorf("unexpected %T", v)
}

// checkIDBTagged validates one tagged object (IDBValueTags).
func checkIDBTagged(m map[string]any, isKey bool, depth int) error {
	tag, _ := m["$"].(string)
	allowed := map[string]bool{"$": true, "v": true}
	switch tag {
	case "view":
		allowed["k"] = true
	case "re":
		allowed["f"] = true
	}
	for k := range m {
		if !allowed[k] {
			return fmt.Errorf("tag %.20q: unexpected field %.20q", tag, k)
		}
	}
	bad := func() error { return fmt.Errorf("tag %.20q: malformed", tag) }
	str := func(k string) (string, bool) { s, ok := m[k].(string); return s, ok }
	var keyErr error
	if isKey {
		keyErr = fmt.Errorf("tag %.20q is not a valid key", tag)
	}
	switch tag {
	case "u":
		if len(m) != 1 {
			return bad()
		}
		return keyErr
	case "n":
		s, _ := str("v")
		switch s {
		case "Infinity", "-Infinity", "-0":
			return nil
		case "NaN":
			return keyErr
		}
		return bad()
	case "big":
		if s, ok := str("v"); !ok || !idbBigInt.MatchString(s) {
			return bad()
		}
		return keyErr
	case "date":
		switch x := m["v"].(type) {
		case json.Number:
			// What a Date holds: ±8.64e15 ms around the epoch.
			if f, err := x.Float64(); err != nil || f > 8.64e15 || f < -8.64e15 {
				return bad()
			}
			return nil
		case nil:
			if _, ok := m["v"]; !ok {
				return bad()
			}
			return keyErr // an invalid date
		}
		return bad()
	case "re":
		_, ok1 := str("v")
		f, ok2 := str("f")
		if !ok1 || !ok2 || !idbRegExpFlags.MatchString(f) {
			return bad()
		}
		return keyErr
	case "ab", "view":
		s, ok := str("v")
		if !ok {
			return bad()
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return bad()
		}
		if tag == "view" {
			k, _ := str("k")
			size, ok := idbViewSizes[k]
			if !ok || len(b)%size != 0 {
				return bad()
			}
		}
		return nil
	case "map", "set":
		a, ok := m["v"].([]any)
		if !ok {
			return bad()
		}
		if keyErr != nil {
			return keyErr
		}
		for _, e := range a {
			if tag == "map" {
				pair, ok := e.([]any)
				if !ok || len(pair) != 2 {
					return bad()
				}
			}
			if err := checkIDBValue(e, false, depth+1); err != nil {
				return err
			}
		}
		return nil
	case "obj":
		o, ok := m["v"].(map[string]any)
		if !ok {
			return bad()
		}
		if keyErr != nil {
			return keyErr
		}
		for _, e := range o {
			if err := checkIDBValue(e, false, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown tag %.20q", tag)
}
