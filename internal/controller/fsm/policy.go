package fsm

import "time"

// Progress is what a replica's heartbeat tells about its log.
type Progress struct {
	Incarnation  uint64
	LastEpoch    uint32
	LEO, Durable int64
}

// PickMaster chooses a new master for g among live replicas.
func PickMaster(g *Group, live map[int64]Progress, allowUnclean bool) (id int64, unclean bool, ok bool) {
	return 0, false, false
}

// LeaseSurelyExpired reports whether a master's lease has surely run out.
func LeaseSurelyExpired(lastGrantRecv, now time.Time, lease time.Duration, drift float64, margin time.Duration) bool {
	return false
}
