package words

import "github.com/narrows/narrows/internal/result"

// The areas the report files its sections under, in the order it shows
// them; doctor's steps carry the same names.
const (
	AreaNetwork = "network"
	AreaStorage = "storage"
	// AreaHosts is what the two ends' own machines add (narrows host).
	AreaHosts       = "hosts"
	AreaDatabase    = "database"
	AreaReplication = "replication"
	AreaBackup      = "backup"
	// AreaRun is a run that is all areas at once (doctor's).
	AreaRun = "run"
)

// Areas are the areas in the order the report shows them.
var Areas = []string{AreaNetwork, AreaHosts, AreaStorage, AreaDatabase, AreaReplication, AreaBackup}

// areas is the area of each kind of part (TestEveryPartHasAnArea).
var areas = map[string]string{
	result.KindStream:      AreaNetwork,
	result.KindRR:          AreaNetwork,
	result.KindLoaded:      AreaNetwork,
	result.KindMTU:         AreaNetwork,
	result.KindHost:        AreaHosts,
	result.KindWatch:       AreaNetwork,
	result.KindChattyPlan:  AreaNetwork,
	result.KindDisk:        AreaStorage,
	result.KindFleet:       AreaStorage,
	result.KindFleetNet:    AreaNetwork,
	result.KindFleetWatch:  AreaNetwork,
	result.KindDBPing:      AreaDatabase,
	result.KindDBLoad:      AreaDatabase,
	result.KindRepl:        AreaReplication,
	result.KindCommit:      AreaReplication,
	result.KindReplicaPlan: AreaReplication,
	result.KindSyncPlan:    AreaReplication,
	result.KindBackupPlan:  AreaBackup,
	result.KindDoctor:      AreaRun,
}

// Area is the area a Report's part belongs to: "run" for a Report with
// none.
func Area(p result.Part) string {
	if p == nil {
		return AreaRun
	}
	if a, ok := areas[p.Kind()]; ok {
		return a
	}
	return AreaRun
}
