package messages

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// idbState wraps one store of origin https://x.test in a state.
func idbState(store string) string {
	return `{"cookies":[],"local_storage":{},"indexed_db":{"https://x.test":[{"name":"app","version":3,"stores":[` + store + `]}]}}`
}

func TestProfileStateIndexedDB(t *testing.T) {
	good := idbState(`{"name":"notes","key_path":"id","auto_increment":true,
		"indexes":[{"name":"by_tag","key_path":"tags","multi_entry":true},{"name":"by_ab","key_path":["a","b.c"],"unique":true}],
		"records":[
			{"k":1,"v":{"$":"obj","v":{"id":1,"when":{"$":"date","v":1700000000000},"bytes":{"$":"view","k":"Uint8Array","v":"AQID"},
				"m":{"$":"map","v":[["a",{"$":"set","v":[1,2]}]]},"u":{"$":"u"},"n":{"$":"n","v":"NaN"},"big":{"$":"big","v":"-12"},
				"re":{"$":"re","v":"a+","f":"gi"},"ab":{"$":"ab","v":""},"arr":[null,true,"s",-1.5],"__proto__":null}}},
			{"k":[{"$":"date","v":0},"x",{"$":"ab","v":"AA=="},{"$":"n","v":"-Infinity"}],"v":null}
		]},{"name":"","key_path":null,"records":[]}`)
	st, err := ParseProfileState([]byte(good))
	require.NoError(t, err)
	db := st.IndexedDB["https://x.test"][0]
	require.Equal(t, int64(3), db.Version)
	require.Len(t, db.Stores[0].Records, 2)
	require.JSONEq(t, `1`, string(db.Stores[0].Records[0].Key))

	// An old state (no indexed_db) and an empty one parse.
	_, err = ParseProfileState([]byte(`{"cookies":[],"local_storage":{}}`))
	require.NoError(t, err)

	rec := func(k, v string) string {
		return idbState(`{"name":"s","key_path":null,"records":[{"k":` + k + `,"v":` + v + `}]}`)
	}
	for name, bad := range map[string]string{
		"origin path":        `{"indexed_db":{"https://x.test/a":[]}}`,
		"origin scheme":      `{"indexed_db":{"file://x":[]}}`,
		"origin query":       `{"indexed_db":{"https://x.test?":[]}}`,
		"version 0":          `{"indexed_db":{"https://x.test":[{"name":"a","version":0,"stores":[]}]}}`,
		"version 2^53":       `{"indexed_db":{"https://x.test":[{"name":"a","version":9007199254740992,"stores":[]}]}}`,
		"version float":      `{"indexed_db":{"https://x.test":[{"name":"a","version":1.5,"stores":[]}]}}`,
		"db twice":           `{"indexed_db":{"https://x.test":[{"name":"a","version":1,"stores":[]},{"name":"a","version":1,"stores":[]}]}}`,
		"store twice":        idbState(`{"name":"s","key_path":null,"records":[]},{"name":"s","key_path":null,"records":[]}`),
		"key path number":    idbState(`{"name":"s","key_path":1,"records":[]}`),
		"key path bad":       idbState(`{"name":"s","key_path":"a..b","records":[]}`),
		"key path empty arr": idbState(`{"name":"s","key_path":[],"records":[]}`),
		"autoinc array path": idbState(`{"name":"s","key_path":["a"],"auto_increment":true,"records":[]}`),
		"autoinc empty path": idbState(`{"name":"s","key_path":"","auto_increment":true,"records":[]}`),
		"index no path":      idbState(`{"name":"s","key_path":null,"indexes":[{"name":"i","key_path":null}],"records":[]}`),
		"index twice":        idbState(`{"name":"s","key_path":null,"indexes":[{"name":"i","key_path":"a"},{"name":"i","key_path":"b"}],"records":[]}`),
		"multientry array":   idbState(`{"name":"s","key_path":null,"indexes":[{"name":"i","key_path":["a"],"multi_entry":true}],"records":[]}`),
		"record no key":      idbState(`{"name":"s","key_path":null,"records":[{"v":1}]}`),
		"key null":           rec(`null`, `1`),
		"key bool":           rec(`true`, `1`),
		"key object":         rec(`{"$":"obj","v":{}}`, `1`),
		"key NaN":            rec(`{"$":"n","v":"NaN"}`, `1`),
		"key undefined":      rec(`{"$":"u"}`, `1`),
		"key invalid date":   rec(`{"$":"date","v":null}`, `1`),
		"key in array":       rec(`[1,{"$":"set","v":[]}]`, `1`),
		"untagged object":    rec(`1`, `{"a":1}`),
		"unknown tag":        rec(`1`, `{"$":"blob","v":""}`),
		"extra field":        rec(`1`, `{"$":"u","v":1}`),
		"bad base64":         rec(`1`, `{"$":"ab","v":"!!"}`),
		"view kind":          rec(`1`, `{"$":"view","k":"Window","v":""}`),
		"view length":        rec(`1`, `{"$":"view","k":"Uint32Array","v":"AQID"}`),
		"bigint":             rec(`1`, `{"$":"big","v":"1e3"}`),
		"date string":        rec(`1`, `{"$":"date","v":"2020"}`),
		"date range":         rec(`1`, `{"$":"date","v":1e16}`),
		"date missing":       rec(`1`, `{"$":"date"}`),
		"regexp flags":       rec(`1`, `{"$":"re","v":"a","f":"x"}`),
		"map pair":           rec(`1`, `{"$":"map","v":[[1]]}`),
		"obj not object":     rec(`1`, `{"$":"obj","v":[]}`),
		"n value":            rec(`1`, `{"$":"n","v":"1"}`),
		"too deep":           rec(`1`, strings.Repeat("[", MaxProfileIDBDepth+2)+strings.Repeat("]", MaxProfileIDBDepth+2)),
		"not json":           rec(`1`, `{`),
	} {
		_, err := ParseProfileState([]byte(bad))
		require.Error(t, err, name)
	}
	_, err = ParseProfileState([]byte(rec(`1`, strings.Repeat("[", MaxProfileIDBDepth)+strings.Repeat("]", MaxProfileIDBDepth))))
	require.NoError(t, err, "nesting at the bound")
}

func TestProfileStateIndexedDBBounds(t *testing.T) {
	origins := map[string][]IDBDatabase{}
	for i := range MaxProfileIDBOrigins + 1 {
		origins[fmt.Sprintf("https://h%d.test", i)] = nil
	}
	b, err := json.Marshal(ProfileState{IndexedDB: origins})
	require.NoError(t, err)
	_, err = ParseProfileState(b)
	require.ErrorContains(t, err, "origins")

	dbs := make([]IDBDatabase, MaxProfileIDBDatabases+1)
	for i := range dbs {
		dbs[i] = IDBDatabase{Name: fmt.Sprint(i), Version: 1}
	}
	b, _ = json.Marshal(ProfileState{IndexedDB: map[string][]IDBDatabase{"https://x.test": dbs}})
	_, err = ParseProfileState(b)
	require.ErrorContains(t, err, "databases")

	stores := make([]IDBStore, MaxProfileIDBStores+1)
	for i := range stores {
		stores[i] = IDBStore{Name: fmt.Sprint(i)}
	}
	b, _ = json.Marshal(ProfileState{IndexedDB: map[string][]IDBDatabase{"https://x.test": {{Name: "a", Version: 1, Stores: stores}}}})
	_, err = ParseProfileState(b)
	require.ErrorContains(t, err, "object stores")

	ixs := make([]IDBIndex, MaxProfileIDBIndexes+1)
	for i := range ixs {
		ixs[i] = IDBIndex{Name: fmt.Sprint(i), KeyPath: json.RawMessage(`"a"`)}
	}
	b, _ = json.Marshal(ProfileState{IndexedDB: map[string][]IDBDatabase{"https://x.test": {{Name: "a", Version: 1, Stores: []IDBStore{{Name: "s", Indexes: ixs}}}}}})
	_, err = ParseProfileState(b)
	require.ErrorContains(t, err, "indexes")

	// Records are bounded over the whole state, across stores and origins.
	recs := func(n int) []IDBRecord {
		r := make([]IDBRecord, n)
		for i := range r {
			r[i] = IDBRecord{Key: json.RawMessage(fmt.Sprint(i)), Value: json.RawMessage(`0`)}
		}
		return r
	}
	half := MaxProfileIDBRecords / 2
	st := ProfileState{IndexedDB: map[string][]IDBDatabase{
		"https://x.test": {{Name: "a", Version: 1, Stores: []IDBStore{{Name: "s", Records: recs(half)}}}},
		"https://y.test": {{Name: "a", Version: 1, Stores: []IDBStore{{Name: "s", Records: recs(MaxProfileIDBRecords - half)}}}},
	}}
	b, _ = json.Marshal(st)
	_, err = ParseProfileState(b)
	require.NoError(t, err, "exactly at the bound")
	st.IndexedDB["https://y.test"][0].Stores[0].Records = recs(MaxProfileIDBRecords - half + 1)
	b, _ = json.Marshal(st)
	_, err = ParseProfileState(b)
	require.ErrorContains(t, err, "records")
}

// FuzzParseProfileState: whatever a worker sends, parsing neither panics
// nor accepts a state that breaks a bound, and an accepted state survives
// a round trip through its own encoding.
func FuzzParseProfileState(f *testing.F) {
	f.Add([]byte(idbState(`{"name":"s","key_path":"id","records":[{"k":1,"v":{"$":"obj","v":{"id":1}}}]}`)))
	f.Add([]byte(idbState(`{"name":"s","key_path":null,"records":[{"k":[{"$":"date","v":0}],"v":{"$":"map","v":[[1,{"$":"u"}]]}}]}`)))
	f.Add([]byte(`{"cookies":[{"name":"a","value":"b","domain":"x"}],"local_storage":{"https://x.test":{"k":"v"}}}`))
	f.Add([]byte(`{"indexed_db":{"https://x.test":[{"name":"a","version":1,"stores":[{"name":"s","key_path":["a","b"],"records":[]}]}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseProfileState(b)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(st.IndexedDB), MaxProfileIDBOrigins)
		n := 0
		for _, dbs := range st.IndexedDB {
			require.LessOrEqual(t, len(dbs), MaxProfileIDBDatabases)
			for _, db := range dbs {
				require.LessOrEqual(t, len(db.Stores), MaxProfileIDBStores)
				for _, s := range db.Stores {
					n += len(s.Records)
				}
			}
		}
		require.LessOrEqual(t, n, MaxProfileIDBRecords)
		again, err := json.Marshal(st)
		require.NoError(t, err)
		if len(again) <= MaxProfileStateBytes {
			_, err = ParseProfileState(again)
			require.NoError(t, err, "re-encoded: %s", again)
		}
	})
}
