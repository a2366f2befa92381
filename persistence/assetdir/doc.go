// Package assetdir is the embedded AssetStore: the files jobs produce, on
// local disk under one directory (by default ./data/assets).
//
// Layout: dir/<jobID>/<name> holds the bytes and dir/<jobID>/.<name>.meta
// the content type. Names and job ids are single path elements that do not
// start with a dot, so no asset can collide with a sidecar or a temporary
// file, and no name can reach outside dir. Each file is written to a
// temporary file in the same directory and renamed into place, so a reader
// sees the old asset or the new one, never a part.
package assetdir
