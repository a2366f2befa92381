package miniostore

import (
	"github.com/paprika-hub/paprika/persistence"
)

// maxNameLen bounds job ids and asset names, as in every asset store.
const maxNameLen = persistence.MaxAssetNameLen

// checkNames and checkName are the asset-name rule every store shares
// (persistence.CheckAssetNames): an asset stored here could be copied to
// local disk, and "<jobID>/" lists exactly one job's assets.
func checkNames(jobID, name string) error { return persistence.CheckAssetNames(jobID, name) }

func checkName(n string) error { return persistence.CheckAssetName(n) }
